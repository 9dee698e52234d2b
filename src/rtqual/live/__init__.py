"""Live displays of a running measurement."""

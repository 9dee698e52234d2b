"""One module per command: its arguments (add_arguments), what it runs (run) and what it prints (text or JSON)."""

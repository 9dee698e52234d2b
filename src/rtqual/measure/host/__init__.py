"""Host facts: what this computer, kernel and tuning are, as recorded in every bundle."""

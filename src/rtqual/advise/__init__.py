"""`rtqual advise`, one feature: the command (command.py); the checks are rtqual.answers.advise."""

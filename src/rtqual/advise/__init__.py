"""`rtqual advise`, one feature: its command (arguments and run), its A/B measurement (measure.py); the checks
and effects are rtqual.answers.advice.advise (and hostchecks), the text rtqual.publish.advise (docs/advise.md)."""

"""rtqual selftest: each probe under injected stalls of known size (run.py), judged by answers.evidence.selftest."""

"""The run: the driver of a run (driver.py), one bundle case (runner.py), one probe process (session.py), the
plan case (case.py), the native executables (native.py) and the live display (terminal.py)."""

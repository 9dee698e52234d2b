"""`rtqual capacity`: how much load a host carries before the requirement breaks (docs/capacity.md). The step
logic (sweep), what is swept (spec: presets and sweep files), the run (run: one bundle, capacity.json) and the
command (command)."""

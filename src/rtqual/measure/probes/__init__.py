"""Probe processes written in Python (the others are native, native/probes/): timerlat, a reader of the kernel's
timerlat tracer speaking the probes' record protocol."""

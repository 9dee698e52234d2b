"""The stall injector (`rtqual-probe inject`): not a measurement but the known latency `rtqual selftest`
makes with the `inject` load; hidden from help and scenario files."""

HIDDEN = True

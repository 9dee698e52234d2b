"""Results: the bundle on disk and the model read from it, the probe's record stream, histograms, statistics
and the monitor's windows. Pure data; nothing here runs a probe or prints an answer."""

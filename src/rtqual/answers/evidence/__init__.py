"""Evidence beyond the statistics: the tail beyond the run (tail.py, EVT), what held the CPU in each spike
(spikes.py), whether the probes caught injected stalls (selftest.py). Pure."""

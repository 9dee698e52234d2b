"""`rtqual monitor`: one probe measuring without end, its windows published (docs/monitoring.md).

window.py turns the probe's stream into per-window statistics (pure); metrics.py exposes them to
Prometheus and node_exporter; pvs.py as EPICS PVs; rtqual.publish.store keeps them (--store); loop.py owns
the probe, the service around it, the signals and the order of all that.
"""

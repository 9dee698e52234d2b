"""Publishing: the answers in the forms people and tools read. Text and HTML reports, figures, comparison,
Prometheus metrics, the history store, and other tools' results imported as bundles."""

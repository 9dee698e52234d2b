"""python -m rtqual.measure.loads > docs/loads.md: the load options reference."""

from rtqual.loadspec import options_markdown

print(options_markdown(), end="")

"""python -m rtqual.loads > docs/loads.md: the load options reference."""

from rtqual.loads import options_markdown

print(options_markdown(), end="")

"""Plain-text layout shared by every printer (the plan, the report, compare, the store's history, fleet): the one
escaping of text that comes from a bundle, and aligned tables of escaped cells."""


def clean(text: object) -> str:
    """Text from a bundle (a label, a host, an IRQ or thread name) safe on one line of a terminal: every
    control character (newline, ESC, ...) and line separator as its escape (\\n, \\x1b), so no value makes a
    fake table row or line or clears the screen. The one escaping of every view."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in s)


def clean_lines(lines: list[str]) -> list[str]:
    """Each line cleaned (clean): a line that a value would break in two stays one."""
    return [clean(line) for line in lines]


def format_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Aligned plain-text table: the first `left` columns flush left, the others (numbers) right; every cell
    cleaned (clean)."""
    headers, rows = [clean(h) for h in headers], [[clean(c) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    return "\n".join(line(r).rstrip() for r in [headers, ["-" * w for w in widths], *rows])

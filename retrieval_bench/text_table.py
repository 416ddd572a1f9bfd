"""Aligned plain-text tables: the one renderer behind every table the CLI prints."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def aligned(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    title: str | None = None,
    left: Collection[int] = (0,),
) -> str:
    """``rows`` under ``header`` with a rule between; columns in ``left`` are
    left-aligned (labels), the rest right-aligned (numbers); ``title`` on top."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths), *map(line, rows)]
    return "\n".join(out)

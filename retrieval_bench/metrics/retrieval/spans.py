"""Line-span helpers for chunk- and line-level retrieval metrics
(docs/metrics.md#chunk-level-examples-with-gold_spans,
docs/metrics.md#line-level-examples-with-gold_spans).

Lines are 1-based and inclusive, as in :class:`~retrieval_bench.types.Chunk`
and :class:`~retrieval_bench.types.Span`. Sets of lines are handled as merged
intervals per path, so a whole-file chunk of 10k lines costs no more than a
three-line one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Chunk, Span

Interval = tuple[int, int]


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint, non-adjacent union of inclusive ``(start, end)`` ranges."""
    out: list[Interval] = []
    for s, e in sorted(iv for iv in intervals if iv[1] >= iv[0]):
        if out and s <= out[-1][1] + 1:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def covered(merged: Sequence[Interval]) -> int:
    """Number of lines in merged intervals."""
    return sum(e - s + 1 for s, e in merged)


def overlap(a: Sequence[Interval], b: Sequence[Interval]) -> int:
    """Number of lines in both of two merged interval lists (two-pointer sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi >= lo:
            total += hi - lo + 1
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _by_path(items: Iterable[Chunk | Span]) -> dict[str, list[Interval]]:
    raw: dict[str, list[Interval]] = {}
    for it in items:
        raw.setdefault(it.path, []).append((it.start_line, it.end_line))
    return {p: merge_intervals(ivs) for p, ivs in raw.items()}


def line_prf(chunks: Sequence[Chunk], spans: Sequence[Span]) -> tuple[float, float, float]:
    """Line-level precision, recall and F1 of ``chunks`` against gold ``spans``.

    Retrieved lines = union of the chunks' ``[start_line, end_line]`` per path
    (a collapsed chunk counts its whole span); gold lines = union of the spans.
    P = |retrieved ∩ gold| / |retrieved|, R = |retrieved ∩ gold| / |gold|, each
    0 when its denominator is; F1 = 2PR/(P+R), 0 when P+R = 0.
    """
    ret, gold = _by_path(chunks), _by_path(spans)
    n_ret = sum(covered(v) for v in ret.values())
    n_gold = sum(covered(v) for v in gold.values())
    inter = sum(overlap(ivs, gold[p]) for p, ivs in ret.items() if p in gold)
    p = inter / n_ret if n_ret else 0.0
    r = inter / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def overlaps(chunk: Chunk, span: Span) -> bool:
    """Same path and intersecting line ranges."""
    return (
        chunk.path == span.path
        and chunk.start_line <= span.end_line
        and span.start_line <= chunk.end_line
    )


def span_qrels(spans: Iterable[Span], corpus: Corpus) -> dict[str, int]:
    """Binary chunk qrels: every corpus chunk overlapping a gold span is relevant (1)."""
    rel: dict[str, int] = {}
    for span in spans:
        for c in corpus.chunks_of(span.path):
            if c.start_line > span.end_line:
                break  # chunks_of is sorted by start line
            if overlaps(c, span):
                rel[c.id] = 1
    return rel

"""Helpers shared by the rerankers (LLM and cross-encoder; docs/stages.md#rerankers).

Candidate selection (the top ``max_candidates`` of the input run: a reranker
cuts about 50 candidates to about 10), snippet truncation, prompt files, and the
scores that keep input order among ties.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.prompt_files import read_sections
from retrieval_bench.types import Chunk, Run

__all__ = ["candidates_of", "load_prompt", "positive_ints", "stable_scores", "truncate_snippet"]

PROMPTS_PACKAGE = "retrieval_bench.reranking"


def load_prompt(name: str) -> dict[str, str]:
    """Sections of ``prompts/<name>.txt`` of this package: ``{"system": ..., "user": ...}``."""
    return read_sections(PROMPTS_PACKAGE, name)


def truncate_snippet(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a line break when one is in the second half."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    nl = cut.rfind("\n")
    if nl > limit // 2:
        cut = cut[:nl]
    return cut + "\n..."


def candidates_of(run: Run, query_id: str, corpus: Corpus, limit: int) -> tuple[list[Chunk], int]:
    """The top ``limit`` chunks of a query in input order, and how many ids the
    corpus does not know (dropped: there is no text to show)."""
    ids = run.ids(query_id, limit)
    chunks = corpus.get(ids)
    return chunks, len(ids) - len(chunks)


def gather_candidates(
    queries: Mapping[str, str], run: Run, corpus: Corpus, limit: int
) -> tuple[dict[str, dict[str, float]], list[tuple[str, str, list[Chunk]]], dict[str, str], int]:
    """What every reranker starts from, for each query of ``run``:

    an empty output slot per query, the (query id, query text, top ``limit``
    chunks) to score, the queries that fail before any call ("empty query"),
    and how many chunk ids the corpus does not know.
    """
    out: dict[str, dict[str, float]] = {}
    todo: list[tuple[str, str, list[Chunk]]] = []
    failures: dict[str, str] = {}
    unknown = 0
    for qid in run.query_ids():
        out[qid] = {}
        chunks, missing = candidates_of(run, qid, corpus, limit)
        unknown += missing
        query = queries.get(qid, "").strip()
        if not query:
            failures[qid] = "empty query"
        elif chunks:
            todo.append((qid, query, chunks))
    return out, todo, failures, unknown


def stable_scores(ordered: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Scores that make :meth:`Run.ranked` reproduce ``ordered`` (best first).

    Walking from the worst up, a score not strictly above the one below it is
    raised to the next float above that one; everything else is unchanged.
    """
    out: dict[str, float] = {}
    below = -math.inf
    for cid, score in reversed(ordered):
        value = score if score > below else math.nextafter(below, math.inf)
        out[cid] = value
        below = value
    return dict(reversed(out.items()))


def positive_ints(reranker: str, **params: int | None) -> None:
    """ConfigError naming ``reranker`` and the key when a value is not a positive int."""
    for key, value in params.items():
        if value is not None and (isinstance(value, bool) or value < 1):
            raise ConfigError(f"{reranker}: {key} must be a positive integer, not {value!r}")

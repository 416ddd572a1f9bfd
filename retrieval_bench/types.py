"""Core value types shared by every stage of the pipeline (docs/architecture.md#core-types).

They are deliberately narrow: a stage receives and returns these, and the
harness scores every stage's :class:`Run` against the same gold, mapped from
chunks to files and line spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CHUNK_KINDS = ("file", "class", "function", "method", "window", "collapsed")


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a repository.

    ``start_line``/``end_line`` are 1-based and inclusive. ``id`` is stable:
    it derives from the content hash, the path and the span, so the same text
    at the same place gets the same id across runs and chunker variants.
    """

    id: str
    path: str
    start_line: int
    end_line: int
    language: str
    kind: str
    symbol: str | None
    text: str
    n_tokens: int = 0


@dataclass(frozen=True)
class Span:
    """A gold line range of one file, 1-based inclusive."""

    path: str
    start_line: int
    end_line: int

    def lines(self) -> range:
        return range(self.start_line, self.end_line + 1)


@dataclass(frozen=True)
class Example:
    """One labelled question. Gold is in files and optional spans, never chunk ids."""

    id: str
    query: str
    gold_files: tuple[str, ...]
    gold_spans: tuple[Span, ...] = ()
    reference_answer: str | None = None
    split: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    gold_functions: tuple[str, ...] = ()
    """Gold functions and classes as ``path:Qualified.name`` (LocAgent's ids); their
    modules are the top-level names (docs/metrics.md#function-and-module-level)."""
    gold_functions_locagent: tuple[str, ...] | None = None
    """The gold functions derived from the fix by LocAgent's rules (docs/metrics.md#conventions),
    scored under ``metrics: {conventions: locagent}``; None when not derived (that
    convention then reads :attr:`gold_functions`), empty when derived and none found."""


class Run:
    """A ranked, scored result list per query: ``{query_id: {chunk_id: score}}``.

    This is what every stage hands the next (and what TREC run files store).
    Higher score = better. Ties are broken by ascending chunk id so rankings
    are deterministic. (trec_eval breaks ties by *descending* docno; metric
    agreement tests therefore use tie-free scores.)
    """

    def __init__(self, name: str, scores: Mapping[str, Mapping[str, float]] | None = None):
        self.name = name
        self.scores: dict[str, dict[str, float]] = {q: dict(d) for q, d in (scores or {}).items()}

    def ranked(self, query_id: str, k: int | None = None) -> list[tuple[str, float]]:
        """Chunk ids with scores for one query, best first, ties by id."""
        items = sorted(self.scores.get(query_id, {}).items(), key=lambda kv: (-kv[1], kv[0]))
        return items if k is None else items[:k]

    def ids(self, query_id: str, k: int | None = None) -> list[str]:
        return [cid for cid, _ in self.ranked(query_id, k)]

    def truncated(self, k: int, name: str | None = None) -> Run:
        return Run(name or self.name, {q: dict(self.ranked(q, k)) for q in self.scores})

    def renamed(self, name: str) -> Run:
        """A copy of this run named ``name`` (the tag its TREC file carries); this
        run is left as it is."""
        return Run(name, self.scores)

    def query_ids(self) -> list[str]:
        return list(self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def __repr__(self) -> str:
        return f"Run({self.name!r}, queries={len(self.scores)})"

    @classmethod
    def from_lists(cls, name: str, lists: Mapping[str, Iterable[str]]) -> Run:
        """Build a run from plain ranked lists, scoring by reciprocal position."""
        scores: dict[str, dict[str, float]] = {}
        for qid, ids in lists.items():
            seen: dict[str, float] = {}
            for pos, cid in enumerate(ids):
                if cid not in seen:
                    seen[cid] = 1.0 / (pos + 1)
            scores[qid] = seen
        return cls(name, scores)


def module_of(entity: str) -> str:
    """The module of a function entity: ``path:Class`` for ``path:Class.method``
    (docs/metrics.md#function-and-module-level)."""
    path, _, name = entity.rpartition(":")
    return f"{path}:{name.split('.', 1)[0]}"


PARENT_CORPUS = "corpus"
"""The stored parent of a retriever (the whole snapshot fed it)."""
PARENT_ALL_RETRIEVERS = "retrievers"
"""The stored parent of a fusion in runs made before fusions declared inputs: every
retriever of the run fed it."""


def parent_inputs(parent: str | None) -> tuple[str, ...] | None:
    """A stored parent read back as input labels: None for a retriever (``corpus``,
    or nothing stored); :data:`PARENT_ALL_RETRIEVERS` is returned as itself."""
    if parent is None or parent == PARENT_CORPUS:
        return None
    return tuple(parent.split(", "))


@dataclass
class StageResult:
    """The output of one stage of one benchmark run."""

    name: str
    run: Run
    seconds: float = 0.0
    llm_calls: int = 0
    llm_tokens: int = 0
    llm_cache_hits: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    """query id → reason, for queries this stage could not serve."""
    inputs: tuple[str, ...] | None = None
    """The labels of the stages whose runs fed this one (for 'lost at stage X'):
    None for a retriever (the corpus fed it), a fusion's declared inputs, the
    stage a reranker reranked."""
    artifacts: dict[str, Any] = field(default_factory=dict)
    """query id → what the stage produced besides scores (HyDE snippets, keywords,
    model answers), stored with the run for the drill-down."""
    loads: dict[str, float] = field(default_factory=dict)
    """Seconds spent loading models while this stage ran (the embedding model, the
    local LLM server), kept out of ``seconds`` so that it is the stage's own work."""
    index_stats: dict[str, int] = field(default_factory=dict)
    """What a retriever's ``index`` reported (``texts_embedded``, ``texts_cached``,
    ``vectors_reused``); summed into the dataset's ``chunk_stats`` by
    :func:`~retrieval_bench.harness.run.snapshot_work.with_index_stats`."""

    @property
    def parent(self) -> str:
        """:attr:`inputs` as stored with a run: ``corpus`` for a retriever, else the
        input labels joined by ``, `` (:func:`parent_inputs` reads it back)."""
        return PARENT_CORPUS if self.inputs is None else ", ".join(self.inputs)

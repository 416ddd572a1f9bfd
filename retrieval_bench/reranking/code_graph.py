"""``code-graph``: rerank files along the code's own structure, no LLM
(docs/stages.md#code-structure).

LocAgent (Chen et al. 2025, "LocAgent: Graph-Guided LLM Agents for Code
Localization") localises an issue by letting an LLM walk a graph of the
repository — files, classes and functions linked by *contain*, *import*,
*invoke* and *inherit* edges — from the entities the issue names. This rung
keeps the graph and drops the agent: one fixed step from the input stage's best
files along import/call edges, plus a lookup of who *defines* what the issue
names (:mod:`retrieval_bench.retrieval.code_graph_index` builds the graph).

The input run (a file run, or a chunk run lifted to files by its best chunk) is
re-scored per query, on files (``file:<path>`` ids, as ``bm25-files``)::

    s_in(f)  = min-max normalised input score of f (0 for a file not in the input;
               1 for all when the input's scores are all equal)
    imp(f)   = max over the top ``top_n`` input files p ≠ f of
               s_in(p) · max(E_imp(p, f), call_weight · E_use(p, f))
    iss(f)   = max over the issue's symbols s that f defines of w_src(s) · idf(s)
    score(f) = (input_weight · s_in(f) + import_weight · imp(f) + issue_weight · iss(f))
               · (test_weight if f is a test file else 1)

* E_imp(p, f) ∈ (0, 1]: p imports f, or imports a name f defines (re-exports
  followed), 1 shared among ambiguous targets; E_use(p, f) = 1/|D(n)| for the
  rarest name n that p calls or reads as an attribute and f defines among its
  D(n) definers (code_graph_index module doc).
* The issue's symbols are those :class:`~retrieval_bench.retrieval.issue_query.IssueReader`
  extracts (identifiers, parts of dotted names, traceback functions in the
  snapshot; dunders such as ``__init__`` skipped), each with its source weight
  w_src (1 from prose, exception lines and frames, 0.5 only in fenced code); a
  file counts only where it *defines* the symbol (``def``/``class``/module-level
  assignment), never for mentioning it; idf(s) = log(1 + N/df(s)) / log(1 + N)
  over the N parsed Python files, so a name defined once weighs 1 and a name
  defined everywhere little.
* Test files (``bm25-files``' :func:`~retrieval_bench.retrieval.file_bm25.is_test_path`)
  are weighted by ``test_weight``; 0 drops them.
* ``input_weight`` (1) weighs the input's own score. With ``input_weight: 0`` the
  stage is one *relation* of the graph, for a learning-to-rank fusion to weigh on
  its own: only the files the relation reaches (score > 0) are returned, e.g.
  ``import_weight: 1, issue_weight: 0`` = the files the top input files import or
  call, ``import_weight: 0, issue_weight: 1`` = the files that define a symbol of
  the issue (docs/stages.md#learning-to-rank).

A boost can pull a file that was not among the candidates into the ranking.
Large weights let the neighbours of the best file overtake it (the candidates
of one package import each other densely); on the dev halves of
swebench-lite-dev and pytest-history the small defaults (0.1) did best
(docs/stages.md#code-structure has the measurements).

Files that are not Python, or do not parse, are never parents nor targets: they
keep their s_in. The best ``k`` files are returned; equal scores rank by id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationInfo, field_validator

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.code_graph_index import CodeGraphIndex, graph_index
from retrieval_bench.retrieval.facts_cache import FactsCache
from retrieval_bench.retrieval.file_bm25 import is_test_path
from retrieval_bench.retrieval.issue_query import corpus_reader
from retrieval_bench.runs.file_ids import file_id, file_path
from retrieval_bench.runs.lifting import file_level_run
from retrieval_bench.types import Run

MAX_ARTIFACTS = 20
"""Boosted files recorded per query for the drill-down."""


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """(x − min)/(max − min); all equal → 1.0 each."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi <= lo:
        return dict.fromkeys(scores, 1.0)
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


def _weight(key: str, value: object, upper: float | None = None) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (upper is not None and value > upper):  # type: ignore[operator]
        allowed = f"in [0, {upper:g}]" if upper is not None else "a number >= 0"
        raise ConfigError(f"code-graph: {key} must be {allowed}, not {value!r}")
    return float(value)  # type: ignore[arg-type]


def _count(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"code-graph: {key} must be an integer >= 0, not {value!r}")
    return value


_UPPER = {"call_weight": 1.0, "test_weight": 1.0}
"""The weights with an upper bound (the others are any number >= 0)."""


class CodeGraphReranker(Reranker):
    """Input files plus the files their imports/calls and the issue's symbols lead to
    (module doc).

    Parameters:
        top_n: how many of the best input files are followed (5).
        input_weight: weight of the input's own score (1; 0 keeps only the files
            the import/call and issue relations reach).
        import_weight: weight of the import/call boost (0.1).
        issue_weight: weight of the issue-symbol definition boost (0.1).
        call_weight: weight of a call/attribute edge against an import edge (0.5).
        test_weight: multiplier of test files' scores, in [0, 1] (1 keeps them).
        name: the output run's name.
        facts_cache: folder of the on-disk facts cache (the harness passes the run's
            ``cache/facts``; None: facts are kept for the process only).

    After ``rerank``: ``artifacts`` (query id → the parents followed, the issue
    symbols defined in the snapshot, and the boosted files).
    """

    name = "code-graph"
    uses_facts_cache = True
    ranks = "files"

    class Params(StageParams):
        """The parameters (class doc)."""

        top_n: int = 5
        input_weight: float = 1.0
        import_weight: float = 0.1
        issue_weight: float = 0.1
        call_weight: float = 0.5
        test_weight: float = 1.0

        @field_validator("*", mode="before")
        @classmethod
        def _check(cls, value: Any, info: ValidationInfo) -> Any:
            """Each value as given: a count, or a finite weight in its range."""
            key = str(info.field_name)
            try:
                if key == "top_n":
                    return _count(key, value)
                return _weight(key, value, _UPPER.get(key))
            except ConfigError as exc:
                raise ValueError(str(exc)) from None

    params: CodeGraphReranker.Params

    def __init__(
        self,
        params: CodeGraphReranker.Params | None = None,
        /,
        *,
        name: str | None = None,
        facts_cache: str | None = None,
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.top_n = p.top_n
        self.input_weight = p.input_weight
        self.import_weight = p.import_weight
        self.issue_weight = p.issue_weight
        self.call_weight = p.call_weight
        self.test_weight = p.test_weight
        if name is not None:
            self.name = name
        self.facts_cache = facts_cache
        super().__init__()

    def config(self) -> dict[str, Any]:
        """Parameters that determine the scores (for provenance)."""
        return {
            "top_n": self.top_n,
            "input_weight": self.input_weight,
            "import_weight": self.import_weight,
            "issue_weight": self.issue_weight,
            "call_weight": self.call_weight,
            "test_weight": self.test_weight,
        }

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Re-score each query's input files (module doc); the best ``k`` as file ids."""
        self.artifacts = {}
        files = file_level_run(run, corpus)
        store = FactsCache.in_dir(self.facts_cache) if self.facts_cache else None
        try:
            index = graph_index(corpus, store)
        finally:
            if store is not None:
                store.close()
        reader = corpus_reader(corpus) if self.issue_weight > 0 else None
        out: dict[str, dict[str, float]] = {}
        for qid in run.query_ids():
            s_in = minmax(
                {p: s for d, s in files.scores.get(qid, {}).items() if (p := file_path(d))}
            )
            symbols = reader.read(queries.get(qid, "")).parsed.symbols if reader else {}
            scores, record = self.score_files(s_in, symbols, index)
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], file_id(kv[0])))[: max(k, 0)]
            out[qid] = {file_id(p): s for p, s in ranked}
            kept = [p for p, _ in ranked if p in record["boosted"]][:MAX_ARTIFACTS]
            record["boosted"] = [{"path": p, **record["boosted"][p]} for p in kept]
            self.artifacts[qid] = record
        return Run(self.name, out)

    def score_files(
        self, s_in: Mapping[str, float], symbols: Mapping[str, float], index: CodeGraphIndex
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Per-file scores of one query from its normalised input scores and the
        issue's symbols (name → source weight), and what was boosted and why."""
        order = sorted(s_in.items(), key=lambda kv: (-kv[1], file_id(kv[0])))
        parents = [p for p, _ in order[: self.top_n] if p in index.facts]
        imp: dict[str, tuple[float, str]] = {}
        if self.import_weight > 0:
            for p in parents:
                edges = index.edges(p)
                reach = {f: self.call_weight * w for f, w in edges.uses.items()}
                for f, w in edges.imports.items():
                    reach[f] = max(reach.get(f, 0.0), w)
                for f, w in reach.items():
                    value = s_in[p] * w
                    if value > imp.get(f, (0.0, ""))[0]:
                        imp[f] = (value, p)
        iss: dict[str, tuple[float, str]] = {}
        defined: dict[str, float] = {}
        if self.issue_weight > 0:
            for raw, source in symbols.items():
                sym = raw.rsplit(".", 1)[-1]
                if sym.startswith("__"):
                    continue  # __init__, __call__: defined everywhere, no file in particular
                idf = index.idf(sym)
                if idf <= 0:
                    continue
                defined[sym] = round(idf, 4)
                for f in index.definers[sym]:
                    if source * idf > iss.get(f, (0.0, ""))[0]:
                        iss[f] = (source * idf, sym)
        scores: dict[str, float] = {}
        boosted: dict[str, dict[str, Any]] = {}
        for f in sorted(set(s_in) | set(imp) | set(iss)):
            i_val, via = imp.get(f, (0.0, ""))
            q_val, sym = iss.get(f, (0.0, ""))
            s_own = self.input_weight * s_in.get(f, 0.0)
            score = s_own + self.import_weight * i_val + self.issue_weight * q_val
            if self.input_weight == 0 and score <= 0:
                continue  # a relation stage returns only the files the relation reaches
            if is_test_path(f):
                if self.test_weight == 0:
                    continue
                score *= self.test_weight
            scores[f] = score
            if i_val > 0 or q_val > 0:
                boosted[f] = {"input": s_in.get(f), "import": i_val, "via": via}
                boosted[f].update({"issue": q_val, "symbol": sym, "score": score})
        return scores, {"parents": parents, "issue_symbols": defined, "boosted": boosted}

    def __repr__(self) -> str:
        return f"CodeGraphReranker({self.config()})"

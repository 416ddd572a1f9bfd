"""Candidate functions of the ``function-ranker`` fusion and their features
(docs/stages.md#function-ranker).

**Candidates.** The candidate files of a question are the union of each input's
top ``top_n`` files (every input lifted to files first, a file scored by its best
chunk), in input order. Of each that is Python (``.py``) and read by the walker's
reader — as the function-level measures read it
(:mod:`retrieval_bench.metrics.retrieval.entities`) — every definition that
:func:`~retrieval_bench.datasets.gold_functions.definitions` names as its own
entity (``name == entity``) is a candidate: top-level functions and classes,
methods, classes nested in classes and their methods. A function nested in a
function is part of its outer function's entity (as gold names it) and no
candidate of its own; a name defined twice in a file (a property's getter and
setter, a conditional redefinition) is one candidate whose text is its
definitions' lines joined. So a candidate is named exactly as a gold function
(``path:Class.method``) and its run id is ``entity:<path>:<Qualified.name>``.

**Features** (:func:`feature_names`; stable names, listed in a model file):

* ``def:bm25`` — BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance
  Framework: BM25 and Beyond", eq. 3.15, with Lucene's smoothed idf
  ``log(1 + (N - n + .5) / (n + .5))``) of one document per candidate — its
  qualified name, its ``def``/``class`` line, its text, its path and its
  enclosing class, tokenised by the code tokenizer (identifier splitting:
  :mod:`~retrieval_bench.retrieval.code_tokens`), so the name and signature
  count twice — against the issue query of ``bm25``'s ``query: issue``
  (:func:`~retrieval_bench.retrieval.issue_query.issue_bag`: title, body and
  named symbols weighted), ``Σ_t w_t · idf(t) · tf (k1 + 1) / (tf + k1 (1 - b + b
  dl / avgdl))``; N, n and avgdl are those of the question's candidates;
* ``def:bm25_norm`` — that score over the question's best (0 when all are 0);
  ``def:bm25_rr`` — 1 / its rank among the candidates by it (ties by id);
* ``name:in_issue`` — its own name is a word of the issue (word boundary, case
  kept); ``name:qualified_in_issue`` — its dotted name (``Class.method``) is;
  ``name:class_in_issue`` — its enclosing class's name is (0 for a top-level one);
* ``frame:name`` — a traceback frame of the issue (``File "...", line N, in
  NAME``) is in a function of its name; ``frame:file_and_name`` — such a frame's
  path also resolves to its file (:class:`~retrieval_bench.retrieval.issue_query.IssueReader`);
* ``path:in_issue`` — the weight with which the issue names its file (a path
  or traceback frame 1, a dotted module 0.5; 0: not named);
* ``graph:calls_named`` / ``graph:called_by_named`` — it calls, or is called
  by, another candidate whose name is in the issue. A call is an identifier
  followed by ``(`` in a definition's text (its own ``def``/``class`` name
  left out), matched by name within the candidates: the code graph's facts are
  per file (:mod:`~retrieval_bench.retrieval.code_facts`), not per definition,
  so a name scan stands in for them;
* ``size:log_lines`` — ``log(1 + lines)``; ``kind:function``, ``kind:method``,
  ``kind:class`` — one-hot; ``def:depth`` — enclosing definitions;
  ``file:is_test`` — a test file (:func:`~retrieval_bench.retrieval.file_bm25.is_test_path`);
  ``file:position`` — its first line's place in its file, in [0, 1);
* per input ``s`` (by stage label): ``s:file_score`` — its file's score in
  ``s``, min-max normalised over the question's files of ``s``, and
  ``s:file_rr`` — 1 / the file's rank in ``s`` (both 0 when ``s`` has not the
  file); ``s:def_rr`` — 1 / its own rank in ``s``'s function ranking, a chunk
  standing for the definitions of its lines as the function measures read it
  (0 when no chunk of ``s`` stands for it; always 0 for a file ranker); then
  ``file:best_rr`` and ``def:best_rr``, the best of each over the inputs.

Every feature is rounded to 4 decimals, as recorded (``record_features``), so a
model fitted on recorded rows scores the rows of a live run alike.
:func:`default_scores` is the untrained score (no model file).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.entities import entity_ranking
from retrieval_bench.rank_fusion.function_candidates import (
    TOKENIZER,
    Candidate,
    flush_candidates,
    stored_candidates,
)
from retrieval_bench.rank_fusion.normsum import minmax
from retrieval_bench.retrieval.file_bm25 import file_source, is_test_path
from retrieval_bench.retrieval.issue_query import IssueQuery, IssueReader, corpus_reader, issue_bag
from retrieval_bench.runs.file_ids import doc_path
from retrieval_bench.types import Run

FloatArray = npt.NDArray[np.float64]

DEFINITION_FEATURES = (
    "def:bm25", "def:bm25_norm", "def:bm25_rr",
    "name:in_issue", "name:qualified_in_issue", "name:class_in_issue",
    "frame:name", "frame:file_and_name", "path:in_issue",
    "graph:calls_named", "graph:called_by_named",
    "size:log_lines", "kind:function", "kind:method", "kind:class",
    "def:depth", "file:is_test", "file:position",
)  # fmt: skip
PER_SOURCE = ("file_score", "file_rr", "def_rr")
BEST_RR = "file:best_rr"
BEST_DEF_RR = "def:best_rr"
KINDS = ("function", "method", "class")
DECIMALS = 4
DEFAULT_WEIGHTS = {"def:bm25_norm": 1.0, BEST_RR: 1.0, "name:in_issue": 0.5, "frame:name": 0.5}
"""The untrained score: a weighted sum of these features (:func:`default_scores`)."""

_WORD = re.compile(r"\w+")
_CANDIDATES_KEY = ("function-ranker-candidates",)


def feature_names(sources: Sequence[str]) -> list[str]:
    """:data:`DEFINITION_FEATURES`, then per source ``s:file_score``, ``s:file_rr``,
    ``s:def_rr``, then ``file:best_rr`` and ``def:best_rr`` (module doc)."""
    return [
        *DEFINITION_FEATURES,
        *(f"{s}:{f}" for s in sources for f in PER_SOURCE),
        BEST_RR,
        BEST_DEF_RR,
    ]


_BY_CONTENT: dict[tuple[str, str], tuple[Candidate, ...]] = {}
_BY_CONTENT_LIMIT = 50_000
"""Candidates by (path, sha256 of the file), for the process: the snapshots of one
repository's history share most files, and each is read once."""


def file_candidates(corpus: Corpus, path: str) -> tuple[Candidate, ...]:
    """The candidates of ``path`` in ``corpus`` (none for a file that is not Python or
    not read by the walker's reader), computed once per corpus and file."""
    known: dict[str, tuple[Candidate, ...]] = corpus.derived(_CANDIDATES_KEY, dict)
    found = known.get(path)
    if found is None:
        found = ()
        if path.endswith(".py"):
            text, sha = file_source(corpus, path)
            if sha is not None:
                cached = _BY_CONTENT.get((path, sha))
                if cached is None:
                    cached = stored_candidates(path, text, corpus.definitions_dir)
                    if len(_BY_CONTENT) >= _BY_CONTENT_LIMIT:
                        _BY_CONTENT.clear()
                    _BY_CONTENT[(path, sha)] = cached
                found = cached
        known[path] = found
    return found


def candidate_files(runs: Sequence[Run | None], query_id: str, top_n: int) -> list[str]:
    """The union of each (file-level) run's top ``top_n`` files, in input order."""
    files: dict[str, None] = {}
    for run in runs:
        if run is not None:
            for doc, _ in run.ranked(query_id, top_n):
                files.setdefault(doc_path(doc))
    return list(files)


def bm25_scores(
    cands: Sequence[Candidate], bag: Mapping[str, float], k1: float, b: float
) -> list[float]:
    """The ``def:bm25`` of each candidate for the weighted query ``bag`` (module doc)."""
    if not cands:
        return []
    n_docs = len(cands)
    avgdl = sum(c.length for c in cands) / n_docs or 1.0
    df = Counter(t for c in cands for t in c.tf if t in bag)
    idf = {t: math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    out = []
    for c in cands:
        norm = k1 * (1.0 - b + b * c.length / avgdl)
        score = 0.0
        for t, w in bag.items():
            tf = c.tf.get(t, 0)
            if tf:
                score += w * idf[t] * tf * (k1 + 1.0) / (tf + norm)
        out.append(score)
    return out


def _issue_features(
    cands: Sequence[Candidate], text: str, issue: IssueQuery, reader: IssueReader
) -> FloatArray:
    """Columns ``name:*``, ``frame:*``, ``path:in_issue`` and ``graph:*`` (module doc)."""
    words = set(_WORD.findall(text))
    frame_names: set[str] = set()
    frame_sites: set[tuple[str, str]] = set()
    for fr in issue.parsed.frames:
        fn = fr.function.rsplit(".", 1)[-1]
        if fn and not fn.startswith("<"):
            frame_names.add(fn)
            frame_sites.update((p, fn) for p in reader.resolve_path(fr.path))

    def qualified(c: Candidate) -> bool:
        if c.depth == 0:
            return c.short in words
        if c.name not in text:  # the cheap test first: most dotted names are not there
            return False
        return re.search(rf"(?<!\w){re.escape(c.name)}(?!\w)", text) is not None

    named = [c for c in cands if c.short in words]
    named_names = {c.short for c in named}
    called = {n for c in named for n in c.calls}
    rows = [
        (
            float(c.short in words), float(qualified(c)), float(bool(c.owner) and c.owner in words),
            float(c.short in frame_names), float((c.path, c.short) in frame_sites),
            issue.paths.get(c.path, 0.0),
            float(bool(c.calls & named_names)), float(c.short in called),
        )
        for c in cands
    ]  # fmt: skip
    return np.asarray(rows, dtype=np.float64).reshape(len(cands), 8)


def query_rows(
    corpus: Corpus,
    runs: Sequence[Run | None],
    query_id: str,
    text: str,
    *,
    top_n: int = 10,
    k1: float = 1.2,
    b: float = 0.75,
    raw_runs: Sequence[Run | None] | None = None,
) -> tuple[list[Candidate], FloatArray]:
    """The candidates of one question and their feature rows (columns:
    :func:`feature_names` of the sources ``runs`` stand for, in order; a None run
    is a source this run lacks, all zeros). ``runs`` rank files (``file_level_run``);
    ``raw_runs`` are the same sources as they ranked (chunks), for ``s:def_rr``
    (None: ``runs``, whose file ids name no definition)."""
    n_extra = len(PER_SOURCE) * len(runs) + 2
    n_features = len(DEFINITION_FEATURES) + n_extra
    files = candidate_files(runs, query_id, top_n)
    cands = [c for path in files for c in file_candidates(corpus, path)]
    flush_candidates(corpus.definitions_dir)  # what this question read, for the next process
    if not cands:
        return [], np.zeros((0, n_features), dtype=np.float64)
    reader = corpus_reader(corpus)
    issue = reader.read(text)
    scores = bm25_scores(cands, issue_bag(issue, TOKENIZER), k1, b)
    best = max(scores)
    order = sorted(range(len(cands)), key=lambda i: (-scores[i], cands[i].entity))
    rank = {i: r for r, i in enumerate(order, start=1)}
    bm25 = np.array(
        [(s, s / best if best > 0 else 0.0, 1.0 / rank[i]) for i, s in enumerate(scores)]
    )
    shape = np.array([
        (math.log1p(c.lines), *(float(c.kind == k) for k in KINDS), float(c.depth),
         float(is_test_path(c.path)), (c.start - 1) / max(1, c.file_lines))
        for c in cands
    ], dtype=np.float64)  # fmt: skip
    width = len(PER_SOURCE)
    per_file = np.zeros((len(cands), n_extra), dtype=np.float64)
    for j, run in enumerate(runs):
        if run is None:
            continue
        ranked = run.ranked(query_id)
        norm = minmax({doc_path(d): s for d, s in reversed(ranked)})
        ranks: dict[str, int] = {}
        for r, (d, _) in enumerate(ranked, start=1):
            ranks.setdefault(doc_path(d), r)
        for i, c in enumerate(cands):
            if c.path in ranks:
                per_file[i, width * j : width * j + 2] = (norm[c.path], 1.0 / ranks[c.path])
        raw = (raw_runs or runs)[j]
        if raw is not None:
            own = definition_ranks(raw, query_id, corpus)
            for i, c in enumerate(cands):
                if c.entity in own:
                    per_file[i, width * j + 2] = 1.0 / own[c.entity]
    if runs:
        per_file[:, -2] = per_file[:, 1:-2:width].max(axis=1)
        per_file[:, -1] = per_file[:, 2:-2:width].max(axis=1)
    x = np.hstack([bm25, _issue_features(cands, text, issue, reader), shape, per_file])
    return cands, np.round(x, DECIMALS)


def definition_ranks(run: Run, query_id: str, corpus: Corpus) -> dict[str, int]:
    """Entity → its 1-based rank in ``run``'s function ranking for the question (each
    chunk standing for its definitions, as the function measures read a chunk run:
    :func:`~retrieval_bench.metrics.retrieval.entities.entity_ranking`); empty for a
    file run, whose ids name no definition."""
    ids = [d for d, _ in run.ranked(query_id)]
    return {e: r for r, e in enumerate(entity_ranking(ids, corpus), start=1)}


def default_scores(x: FloatArray, names: Sequence[str]) -> FloatArray:
    """The untrained score of each row: ``def:bm25_norm + file:best_rr + 0.5 ·
    name:in_issue + 0.5 · frame:name`` (:data:`DEFAULT_WEIGHTS`)."""
    weights = np.zeros(len(names), dtype=np.float64)
    for name, w in DEFAULT_WEIGHTS.items():
        weights[list(names).index(name)] = w
    return np.asarray(x @ weights, dtype=np.float64)

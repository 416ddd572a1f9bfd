"""File-level features for learning to rank (docs/stages.md#learning-to-rank).

The ``ltr`` fusion (:mod:`retrieval_bench.rank_fusion.ltr`) scores *files*. Every
input run is first lifted to files — a file scored by its best chunk, as the
harness does for file-level fusion (docs/stages.md#external) — from the ids
alone, so features computed offline from stored TREC runs
(:mod:`retrieval_bench.rank_fusion.ltr_fit`) equal the ones computed in a run.

Per source ``s`` (keyed by stage label) a candidate file ``f`` gets the three
features of :func:`~retrieval_bench.rank_fusion.learned.candidate_features`
(``s:score`` min-max normalised in the query, ``s:rr`` = 1/rank, ``s:present``)
and then ``n_sources``. Then the *path priors* (issue rung "priors"): how often
a change lands in a kind of file is learned, not assumed, as the weight of

* ``prior:test``     — a test file (:func:`~retrieval_bench.datasets.swebench.is_test_path`);
* ``prior:aux``      — under ``docs/``, ``doc/``, ``examples/``, ``benchmarks/``,
  ``bench/``, ``scripts/`` or ``tools/`` at any depth;
* ``prior:init``     — a package's ``__init__.py``;
* ``prior:depth``    — the number of folders above the file, divided by 10.

With the query's text (model files fitted with ``--query-features``), three
features of the question and the path (issue rung "paths"):

* ``query:path_overlap`` — the share of the path's code tokens (folders and
  stem, split like identifiers) that the question's tokens hold;
* ``query:stem``         — the file's stem (3+ characters, not ``__init__``)
  is a word of the question (``L031`` names ``rules/L031.py``);
* ``query:test_of``      — the question names the file's test (``test_<stem>``
  or ``<stem>_test``): an issue quoting a failing test points at its source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from retrieval_bench.datasets.swebench import is_test_path
from retrieval_bench.rank_fusion.learned import candidate_features
from retrieval_bench.rank_fusion.learned import feature_names as source_feature_names
from retrieval_bench.runs.file_ids import doc_path, file_id
from retrieval_bench.types import Run

if TYPE_CHECKING:
    from retrieval_bench.retrieval.code_tokens import CodeTokenizer

FloatArray = npt.NDArray[np.float64]

PRIORS = ("prior:test", "prior:aux", "prior:init", "prior:depth")
QUERY_FEATURES = ("query:path_overlap", "query:stem", "query:test_of")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_AUX = re.compile(r"(^|/)(docs?|examples?|benchmarks?|bench|scripts|tools)/")


def lift_to_files(run: Run) -> Run:
    """``run`` with ``file:<path>`` ids, each file scored by its best id (same name)."""
    scores: dict[str, dict[str, float]] = {}
    for q, docs in run.scores.items():
        best: dict[str, float] = {}
        for doc, s in docs.items():
            fid = file_id(doc_path(doc))
            if fid not in best or s > best[fid]:
                best[fid] = s
        scores[q] = best
    return Run(run.name, scores)


def path_priors(path: str) -> tuple[float, float, float, float]:
    """The four prior features of a file path (module doc)."""
    return (
        float(is_test_path(path)),
        float(bool(_AUX.search(path))),
        float(path.rsplit("/", 1)[-1] == "__init__.py"),
        path.count("/") / 10.0,
    )


def feature_names(sources: Sequence[str], query_features: bool = False) -> list[str]:
    """Per-source features, ``n_sources``, :data:`PRIORS`, then (with
    ``query_features``) :data:`QUERY_FEATURES`."""
    return [*source_feature_names(sources), *PRIORS, *(QUERY_FEATURES if query_features else ())]


QueryTerms = tuple[frozenset[str], frozenset[str]]
"""A question's code tokens and its lowercased words, read once per question."""


@lru_cache(maxsize=1)
def _tokenizer() -> CodeTokenizer:
    from retrieval_bench.retrieval.code_tokens import CodeTokenizer

    return CodeTokenizer()


def query_terms(query: str) -> QueryTerms:
    """What :func:`query_path_features` reads of a question."""
    words = frozenset(w.lower() for w in _WORD.findall(query))
    return frozenset(_tokenizer()(query)), words


def query_path_features(query: str | QueryTerms, path: str) -> tuple[float, float, float]:
    """The three question-and-path features of ``path`` (module doc); ``query`` is the
    question or its :func:`query_terms`."""
    q_tokens, words = query_terms(query) if isinstance(query, str) else query
    stem_path = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    p_tokens = set(_tokenizer()(stem_path.replace("/", " ")))
    overlap = len(p_tokens & q_tokens) / len(p_tokens) if p_tokens else 0.0
    stem = stem_path.rsplit("/", 1)[-1].lower()
    named = float(len(stem) >= 3 and stem != "__init__" and stem in words)
    test_of = float(f"test_{stem}" in words or f"{stem}_test" in words)
    return overlap, named, test_of


def file_features(
    file_runs: Mapping[str, Run], sources: Sequence[str], query_id: str, query: str | None = None
) -> tuple[list[str], FloatArray]:
    """Candidate files of one query (sorted ``file:`` ids) and their feature rows.

    ``file_runs`` are already lifted (:func:`lift_to_files`); a source absent
    from them gives zeros. With ``query`` (its text), :data:`QUERY_FEATURES` follow.
    """
    cands, x = candidate_features(file_runs, sources, query_id)
    priors = np.array([path_priors(doc_path(c)) for c in cands], dtype=np.float64)
    parts = [x, priors.reshape(len(cands), len(PRIORS))]
    if query is not None:
        terms = query_terms(query)  # once per question, not once per candidate
        qf = [query_path_features(terms, doc_path(c)) for c in cands]
        parts.append(np.array(qf, dtype=np.float64).reshape(len(cands), len(QUERY_FEATURES)))
    return cands, np.hstack(parts)

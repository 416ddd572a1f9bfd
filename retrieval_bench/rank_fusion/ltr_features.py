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
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from retrieval_bench.datasets.swebench import is_test_path
from retrieval_bench.rank_fusion.learned import candidate_features
from retrieval_bench.rank_fusion.learned import feature_names as source_feature_names
from retrieval_bench.runs.file_ids import file_id, file_path
from retrieval_bench.types import Run

FloatArray = npt.NDArray[np.float64]

PRIORS = ("prior:test", "prior:aux", "prior:init", "prior:depth")
_AUX = re.compile(r"(^|/)(docs?|examples?|benchmarks?|bench|scripts|tools)/")


def doc_path(doc_id: str) -> str:
    """The file of a run id: ``file:<path>`` → path; chunk ``<path>:<a>-<b>:<hash>`` → path."""
    path = file_path(doc_id)
    if path is not None:
        return path
    parts = doc_id.rsplit(":", 2)
    return parts[0] if len(parts) == 3 else doc_id


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


def feature_names(sources: Sequence[str]) -> list[str]:
    """Per-source features, ``n_sources``, then :data:`PRIORS`."""
    return [*source_feature_names(sources), *PRIORS]


def file_features(
    file_runs: Mapping[str, Run], sources: Sequence[str], query_id: str
) -> tuple[list[str], FloatArray]:
    """Candidate files of one query (sorted ``file:`` ids) and their feature rows.

    ``file_runs`` are already lifted (:func:`lift_to_files`); a source absent
    from them gives zeros.
    """
    cands, x = candidate_features(file_runs, sources, query_id)
    priors = np.array([path_priors(doc_path(c)) for c in cands], dtype=np.float64)
    return cands, np.hstack([x, priors.reshape(len(cands), len(PRIORS))])

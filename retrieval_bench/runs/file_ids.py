"""File-level document ids: ``file:<path>`` stands for a whole file.

Most stages rank chunks, but an external system (:mod:`retrieval_bench.retrieval.external`)
ranks files, some of which may be absent from our snapshot. Its runs hold
``file:<path>`` ids. Scoring (:mod:`retrieval_bench.metrics.retrieval.scoring`)
maps such an id to ``<path>`` whether or not the corpus has the file, so a
named file that is not in the snapshot still counts as a retrieved,
non-relevant document (docs/metrics.md#file-level-runs).
"""

from __future__ import annotations

from collections.abc import Mapping

FILE_PREFIX = "file:"


def file_id(path: str) -> str:
    """The run id standing for the whole file ``path``."""
    return FILE_PREFIX + path


def file_path(doc_id: str) -> str | None:
    """The path of a ``file:<path>`` id; None for any other id (a chunk id)."""
    if doc_id.startswith(FILE_PREFIX) and len(doc_id) > len(FILE_PREFIX):
        return doc_id[len(FILE_PREFIX) :]
    return None


def has_file_ids(scores: Mapping[str, Mapping[str, float]]) -> bool:
    """Whether some query of a run's ``scores`` ranks ``file:<path>`` ids."""
    return any(file_path(d) is not None for docs in scores.values() for d in docs)

"""File-level document ids: ``file:<path>`` stands for a whole file.

Most stages rank chunks, but an external system (:mod:`retrieval_bench.retrieval.external`)
ranks files, some of which may be absent from our snapshot. Its runs hold
``file:<path>`` ids. Scoring (:mod:`retrieval_bench.metrics.retrieval.scoring`)
maps such an id to ``<path>`` whether or not the corpus has the file, so a
named file that is not in the snapshot still counts as a retrieved,
non-relevant document (docs/metrics.md#file-level-runs).

``entity:<path>:<Qualified.name>`` stands for one function, class or module of
a file (another system's ``found_entities``): it is the file ``<path>`` at file
level and that entity at function and module level
(docs/metrics.md#function-and-module-level).
"""

from __future__ import annotations

from collections.abc import Mapping

FILE_PREFIX = "file:"
ENTITY_PREFIX = "entity:"


def file_id(path: str) -> str:
    """The run id standing for the whole file ``path``."""
    return FILE_PREFIX + path


def file_path(doc_id: str) -> str | None:
    """The path of a ``file:<path>`` or ``entity:<path>:<name>`` id; None for any
    other id (a chunk id)."""
    if doc_id.startswith(FILE_PREFIX) and len(doc_id) > len(FILE_PREFIX):
        return doc_id[len(FILE_PREFIX) :]
    entity = entity_of(doc_id)
    return entity.rpartition(":")[0] if entity is not None else None


def entity_id(entity: str) -> str:
    """The run id standing for the entity ``path:Qualified.name``."""
    return ENTITY_PREFIX + entity


def entity_of(doc_id: str) -> str | None:
    """The ``path:Qualified.name`` of an ``entity:`` id; None for any other id."""
    if doc_id.startswith(ENTITY_PREFIX):
        entity = doc_id[len(ENTITY_PREFIX) :]
        path, _, name = entity.rpartition(":")
        if path and name:
            return entity
    return None


def has_file_ids(scores: Mapping[str, Mapping[str, float]]) -> bool:
    """Whether some query of a run's ``scores`` ranks ``file:<path>`` ids."""
    return any(file_path(d) is not None for docs in scores.values() for d in docs)


def doc_path(doc_id: str) -> str:
    """The file of a run id, without a corpus: ``file:<path>`` and ``entity:<path>:<name>``
    → path; a chunk id ``<path>:<a>-<b>:<hash>`` → path."""
    path = file_path(doc_id)
    if path is not None:
        return path
    parts = doc_id.rsplit(":", 2)
    return parts[0] if len(parts) == 3 else doc_id

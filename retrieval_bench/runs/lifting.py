"""A chunk run lifted to files (docs/metrics.md#file-level-runs): the files of
ranked chunks in rank order, and file-level runs scored by each file's best
chunk. Stages read it (a fusion over a file run, the code graph) and so do the
measures; it sits below both (docs/architecture.md#layers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from retrieval_bench.corpus import Corpus
from retrieval_bench.runs.file_ids import file_id, file_path
from retrieval_bench.types import Run

__all__ = ["file_level_run", "files_run", "ranked_files", "ranked_ids"]


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """Ids best first, ties by ascending id: the same order as ``Run.ids``.

    Tie-free scores need one sort by score; otherwise two stable sorts (by id,
    then by score descending, ``reverse`` keeping stability). Either avoids a
    Python key tuple per item, which is what makes ranking 10k queries cheap.
    """
    if len(set(scores.values())) == len(scores):
        return sorted(scores, key=scores.__getitem__, reverse=True)
    return sorted(sorted(scores), key=scores.__getitem__, reverse=True)


def ranked_files(chunk_ids: Iterable[str], corpus: Corpus) -> list[str]:
    """Files of ranked chunks, ranked by their best chunk; unknown ids skipped.

    A ``file:<path>`` id (a file-level run) is ``<path>``, in the corpus or not.
    """
    by_id = corpus.by_id
    paths = (c.path if (c := by_id.get(i)) is not None else file_path(i) for i in chunk_ids)
    return list(dict.fromkeys(p for p in paths if p is not None))


def files_run(run: Run, corpus: Corpus, name: str | None = None) -> Run:
    """The file-level run: each file scored by its best chunk's score.

    Useful for exporting file rankings as TREC run files. File order equals
    :func:`ranked_files` except among files whose best chunks tie on score.
    """
    out: dict[str, dict[str, float]] = {}
    for q, scores in run.scores.items():
        files: dict[str, float] = {}
        for cid in ranked_ids(scores):
            chunk = corpus.by_id.get(cid)
            path = chunk.path if chunk is not None else file_path(cid)
            if path is not None and path not in files:
                files[path] = scores[cid]
        out[q] = files
    return Run(name or f"{run.name}:files", out)


def file_level_run(run: Run, corpus: Corpus) -> Run:
    """:func:`files_run` with ``file:<path>`` ids, under ``run``'s own name: what a
    fusion reads when one of its inputs ranks files (docs/stages.md#external)."""
    lifted = files_run(run, corpus, run.name)
    lifted.scores = {q: {file_id(p): s for p, s in d.items()} for q, d in lifted.scores.items()}
    return lifted

"""One snapshot's history: the first-parent commits up to its commit, with the files
each changed named as they are *in the snapshot* (docs/stages.md#history).

Built once per snapshot from the repository's
:class:`~retrieval_bench.retrieval.history_log.RepoLog` (the stages of a config share it through
:meth:`~retrieval_bench.corpus.Corpus.derived`); everything after it is arithmetic in
memory. The commit at position ``age`` of :attr:`SnapshotHistory.rows` is ``age``
first-parent steps before the snapshot's commit S (S itself has age 0), and no
commit after S, or beside its first-parent line, is in it.

**Renames.** Walking from S back in time, a map holds, for each path as it was at the
commit being visited, the path its file has at S. A rename ``old → new`` at a commit
sends ``old`` (before it) to wherever ``new`` went; a file added at a commit was not
there before it, so an older file at that path is another one (the map forgets the
path); a file deleted at a commit is a line of history that ended before S: that
change and every older one of that file count for no file of the snapshot (even one
re-added later at the same path). Renames below git's 50 % similarity look like a
delete and an add, and their history is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from retrieval_bench.retrieval.history_log import RepoLog


@dataclass(frozen=True)
class SnapshotHistory:
    """The first-parent history of commit :attr:`commit`, newest first (module doc)."""

    log: RepoLog
    commit: str
    rows: np.ndarray
    """Rows of :attr:`log` in first-parent order from S: ``rows[age]``."""
    files: list[tuple[str, ...]] = field(repr=False)
    """Per age, the distinct files that commit changed, by their paths at S (changes
    of a file deleted before S left out)."""
    n_changed: list[int] = field(repr=False)
    """Per age, how many files that commit changed (its ``--name-status`` lines: any
    status, a rename once, files not in the snapshot included): what its similarity
    is shared among."""
    moved: dict[int, dict[str, str | None]] = field(default_factory=dict, repr=False)
    """Per age, the paths (as that commit left them) that are another path at S, or
    None when that file's line ended before S; absent: the same path (:meth:`at_s`)."""

    @classmethod
    def of(cls, log: RepoLog, commit: str) -> SnapshotHistory:
        """The history of ``commit`` from ``log`` (read from git where it lacks it)."""
        rows = log.chain(commit)
        records = log.records
        at_s: dict[str, str | None] = {}  # path at the visited commit → path at S (None: gone)
        files: list[tuple[str, ...]] = []
        n_changed: list[int] = []
        moved: dict[int, dict[str, str | None]] = {}
        for age, row in enumerate(rows):
            changes = records[row].changes
            touched: dict[str, None] = {}
            for status, _old, new in changes:
                if status == "D":
                    continue
                now = at_s.get(new, new) if at_s else new
                if now != new:
                    moved.setdefault(age, {})[new] = now
                if now is not None:
                    touched[now] = None
            files.append(tuple(touched))
            n_changed.append(len(changes))
            if at_s or any(c[0] in "RAD" for c in changes):
                _step_back(at_s, changes)
        return cls(log, commit, np.asarray(rows, dtype=np.int64), files, n_changed, moved)

    def at_s(self, age: int, path: str) -> str | None:
        """The path at S of the file the commit at ``age`` left at ``path`` (None: a
        file whose line ended before S, module doc)."""
        found = self.moved.get(age)
        return path if found is None else found.get(path, path)

    def __len__(self) -> int:
        return len(self.rows)

    @cached_property
    def ages_of(self) -> dict[str, list[int]]:
        """Path at S → the ages of the commits that changed it, ascending."""
        out: dict[str, list[int]] = {}
        for age, paths in enumerate(self.files):
            for path in paths:
                out.setdefault(path, []).append(age)
        return out

    @cached_property
    def age_of_row(self) -> np.ndarray:
        """Row of the log → its age in this history, -1 for a commit not in it."""
        ages = np.full(len(self.log), -1, dtype=np.int64)
        ages[self.rows] = np.arange(len(self.rows), dtype=np.int64)
        return ages


def _step_back(at_s: dict[str, str | None], changes: tuple[tuple[str, str, str], ...]) -> None:
    """Move the path map from just after a commit to just before it (module doc)."""
    moved: dict[str, str | None] = {}
    for status, old, new in changes:
        if status == "R":
            moved[old] = at_s.get(new, new)
            at_s.pop(new, None)
        elif status in "AC":
            at_s.pop(new, None)
        elif status == "D":
            moved[old] = None
    at_s.update(moved)

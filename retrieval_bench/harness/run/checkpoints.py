"""Finished snapshot groups of a run, kept so an interrupted run resumes without
redoing them (docs/architecture.md#executors).

Each finished group's :class:`~retrieval_bench.harness.run.snapshot_work.GroupResult`
is written to ``results/<run-id>/groups/<key>.pkl`` as soon as it arrives
(:func:`~retrieval_bench.store.io.open_atomically`, mode 0600: a kill
mid-write leaves no half file). The key is a hash
of what the group's results depend on — the results part of the config, the
dataset, the snapshot and the question ids — so a resumed run takes a
checkpoint only for the very same work. Failed groups are not kept: a resume
tries them again (the bundle or tarball may have been fixed since). The files
are this version's own pickles, read back only by the same ``retrieval-bench``
version; a checkpoint that cannot be read is run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import pickle
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from retrieval_bench.store.io import open_atomically
from retrieval_bench.version import __version__

log = logging.getLogger(__name__)
FORMAT = 2  # 2: StageResult carries index_stats


def group_key(config: dict[str, Any], dataset: str, snapshot: str, ids: list[str]) -> str:
    """The content key of one snapshot group's work."""
    data = {"config": config, "dataset": dataset, "snapshot": snapshot, "ids": sorted(ids)}
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


class TaskResult(Protocol):
    key: str
    failure: str | None


R = TypeVar("R", bound=TaskResult)


class Checkpoints(Generic[R]):
    """The finished tasks of one run (or sweep): ``<folder>/<key>.pkl``, each a ``kind``."""

    def __init__(self, folder: Path, kind: type[R]) -> None:
        self.folder = Path(folder)
        self.kind = kind

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pkl"

    def save(self, result: R) -> None:
        if result.failure is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open_atomically(self._path(result.key), mode=0o600) as fh:
            pickle.dump({"format": FORMAT, "version": __version__, "result": result}, fh)

    def load(self, key: str) -> R | None:
        """The kept result of ``key``, None when there is none (or it is unreadable)."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            with path.open("rb") as fh:
                data = pickle.load(fh)
            if data.get("format") != FORMAT or data.get("version") != __version__:
                return None
            result = data["result"]
        except Exception as exc:  # damaged or from another version: run the group again
            log.warning("checkpoint %s unreadable (%s); running that snapshot again", path, exc)
            return None
        return result if isinstance(result, self.kind) and result.key == key else None

    def clear(self) -> None:
        """Remove the checkpoints (a finished run no longer needs them)."""
        if self.folder.is_dir():
            for path in self.folder.glob("*.pkl"):
                path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # something else in it: leave it
                self.folder.rmdir()

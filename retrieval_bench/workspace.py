"""Where retrieval_bench keeps its on-disk state (indexes, caches, results)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Workspace:
    """All persistent state lives under one folder (default ``./.rbench``).

    ``RBENCH_HOME`` overrides the default. Caches that are safe to share
    across projects (downloaded snapshots, embeddings) may be pointed
    elsewhere with ``RBENCH_CACHE``.
    """

    root: Path

    @classmethod
    def default(cls) -> Workspace:
        return cls(Path(os.environ.get("RBENCH_HOME", ".rbench")).resolve())

    @property
    def cache_dir(self) -> Path:
        return Path(os.environ.get("RBENCH_CACHE", str(self.root / "cache")))

    @property
    def index_dir(self) -> Path:
        return self.root / "indexes"

    @property
    def snapshots_dir(self) -> Path:
        return self.cache_dir / "snapshots"

    @property
    def embeddings_uri(self) -> Path:
        return self.cache_dir / "embeddings"

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    @property
    def db_path(self) -> Path:
        return self.root / "rbench.sqlite"

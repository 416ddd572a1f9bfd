"""Which snapshot each question is asked against (docs/datasets.md#per-question-snapshots).

A row names its snapshot with ``snapshot`` (folder, tarball, ``git+URL@commit``,
``name==version``; a relative path is relative to the questions file) or with
``repo`` + ``commit`` (``base_commit``); a row without one uses the dataset's
``snapshot:``. :func:`resolve_repo_refs` turns every ``repo`` + ``commit`` (or
its parent) into the full commit sha before any tree is extracted, in one git
call per repository, so questions asked at one commit share one snapshot and a
commit the mirror lacks is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot.sources import is_tarball, repo_source, resolve_repo_commits
from retrieval_bench.types import Example


@dataclass(frozen=True)
class SnapshotRef:
    """The snapshot one row names."""

    kind: Literal["spec", "tarball", "repo"]
    target: str
    """The snapshot string, the tarball's path, or ``owner/name``."""
    commit: str = ""
    parent: bool = False
    sha256: str | None = None
    source: str | None = None
    """``repo`` only: the bundle, mirror or URL it is read from (set once resolved)."""

    @property
    def label(self) -> str:
        if self.kind == "repo":
            return f"{self.target}@{self.commit[:12]}{'^' if self.parent else ''}"
        return Path(self.target).name if self.kind == "tarball" else self.target


class RowSource(Protocol):
    """What :func:`row_ref` reads of a dataset spec (``config.DatasetSpec``)."""

    @property
    def questions(self) -> Path: ...
    @property
    def repo(self) -> str | None: ...
    @property
    def commit_is(self) -> str: ...


def row_ref(example: Example, spec: RowSource) -> SnapshotRef | None:
    """The snapshot ``example`` names itself, None when it uses the dataset's."""
    meta = example.meta
    snap = meta.get("snapshot")
    base = Path(spec.questions).parent
    if isinstance(snap, str) and snap.strip():
        snap = snap.strip()
        local = not any(m in snap for m in ("==", "@", "://"))
        if local and not Path(snap).expanduser().is_absolute():
            snap = str((base / Path(snap).expanduser()).resolve())
        if local and is_tarball(snap):
            sha = meta.get("snapshot_sha256")
            return SnapshotRef("tarball", snap, sha256=sha if isinstance(sha, str) else None)
        return SnapshotRef("spec", snap)
    repo = meta.get("repo") or spec.repo
    commit = meta.get("commit") or meta.get("base_commit")
    if isinstance(repo, str) and repo.strip() and isinstance(commit, str) and commit.strip():
        parent = spec.commit_is == "parent"
        return SnapshotRef("repo", repo.strip(), commit.strip(), parent=parent)
    return None


def resolve_repo_refs(
    refs: Sequence[SnapshotRef], cache_dir: Path, locations: Mapping[str, str]
) -> dict[SnapshotRef, SnapshotRef | SnapshotError]:
    """Each ``repo`` ref → the ref of the exact commit it means (``parent`` resolved,
    the source fixed), or the one-line reason it cannot be opened. Refs of other
    kinds map to themselves."""
    out: dict[SnapshotRef, SnapshotRef | SnapshotError] = {}
    by_repo: dict[tuple[str, bool], list[SnapshotRef]] = {}
    for ref in refs:
        if ref.kind == "repo":
            by_repo.setdefault((ref.target, ref.parent), []).append(ref)
        else:
            out[ref] = ref
    for (repo, parent), group in by_repo.items():
        source = repo_source(repo, locations)
        try:
            shas = resolve_repo_commits(
                repo, [r.commit for r in group], cache_dir, source=source, parent=parent
            )
        except SnapshotError as exc:  # the mirror itself: every question of the repo
            out.update(dict.fromkeys(group, exc))
            continue
        for ref in group:
            sha = shas[ref.commit]
            out[ref] = (
                sha if isinstance(sha, SnapshotError)
                else replace(ref, commit=sha, parent=False, source=source)
            )  # fmt: skip
    return out

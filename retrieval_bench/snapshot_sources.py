"""Per-question snapshots: tarballs and ``owner/name@commit`` through a local mirror
(docs/datasets.md#per-question-snapshots).

* :func:`open_tarball`: a ``.tar.gz``/``.tgz``/``.tar`` file, sha256-checked when a
  hash is given, unpacked once into ``cache_dir/tarball-trees/<sha256>`` (a single
  top folder is stripped); the fingerprint is the archive's sha256.
* :func:`open_repo`: ``owner/name`` at a commit (or its parent). The repository's
  source is a local git bundle, a local repository or a URL (default
  ``https://github.com/<owner>/<name>.git``; :func:`repo_locations` reads the
  overrides). It is cloned once as a bare mirror into ``cache_dir/mirrors/``; the
  commit's tree is ``git archive``-d once into ``cache_dir/repo-trees/<tree sha>``
  (content-keyed: two commits with one tree share it); the fingerprint is the
  commit sha.

Every failure is a one-line :class:`SnapshotError` naming the input.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from pathlib import Path

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import (
    Snapshot,
    build_aside,
    file_sha256,
    read_unpack_meta,
    resolve_commit,
    run_command,
    unpack_archive,
)

TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar")
DEFAULT_REPO_URL = "https://github.com/{repo}.git"
REPOS_ENV = "RBENCH_REPOS"
_BUNDLE_HEADERS = (b"# v2 git bundle", b"# v3 git bundle")
_REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def is_tarball(spec: str) -> bool:
    """Whether ``spec`` names a tar archive by its suffix."""
    return spec.strip().lower().endswith(TARBALL_SUFFIXES)


def open_tarball(
    path: Path, cache_dir: Path, *, expected_sha256: str | None = None, source: str | None = None
) -> Snapshot:
    """Unpack ``path`` once (keyed by its sha256) and return the tree below its top folder."""
    source = source or str(path)
    if not path.is_file():
        raise SnapshotError(f"tarball {source!r} does not exist: check the path")
    try:
        sha = file_sha256(path)
    except OSError as exc:
        raise SnapshotError(f"tarball {source!r} cannot be read: {exc}") from exc
    expected = expected_sha256.strip().lower() if expected_sha256 else None
    if expected and sha != expected:
        raise SnapshotError(
            f"tarball {source!r}: sha256 mismatch (expected {expected[:16]}…, got {sha[:16]}…): "
            "get the file again or fix snapshot_sha256"
        )
    holder = Path(cache_dir) / "tarball-trees" / sha
    recorded = read_unpack_meta(holder)
    if recorded is None and not tarfile.is_tarfile(path):
        raise SnapshotError(
            f"tarball {source!r} cannot read archive: not a tar/tar.gz file: get it again"
        )
    top = recorded["top"] if recorded else unpack_archive(source, path, holder, sha)
    return Snapshot(holder / top, source, "tarball", sha)


# ----------------------------------------------------------------------------- repos


def repo_locations(configured: Mapping[str, str] | None = None) -> dict[str, str]:
    """``owner/name`` → local bundle, mirror or URL: the config's ``repos:``, then
    ``$RBENCH_REPOS`` (``owner/name=path,...``), which wins (it is the local override)."""
    out = dict(configured or {})
    for item in os.environ.get(REPOS_ENV, "").split(","):
        name, sep, where = item.partition("=")
        if sep and name.strip() and where.strip():
            out[name.strip()] = str(Path(where.strip()).expanduser())
    return out


def repo_source(repo: str, locations: Mapping[str, str] | None = None) -> str:
    """Where ``repo`` is fetched from: its override, else its public GitHub URL."""
    found = (locations or {}).get(repo)
    return found if found else DEFAULT_REPO_URL.format(repo=repo)


def _check_source(repo: str, source: str) -> None:
    if "://" in source or source.startswith("git@"):
        return
    path = Path(source)
    if not path.exists():
        raise SnapshotError(
            f"repository {repo}: {source} does not exist: fix repos: in the config or {REPOS_ENV}"
        )
    if path.is_file():
        with path.open("rb") as fh:
            head = fh.read(16)
        if not head.startswith(_BUNDLE_HEADERS):
            raise SnapshotError(
                f"repository {repo}: {source} is not a git bundle (no '# v2 git bundle' "
                "header): give a file made by git bundle create, a repository or a URL"
            )


def _mirror(repo: str, source: str, cache_dir: Path) -> Path:
    """The bare mirror of ``source`` in the cache, cloned on first use."""
    if shutil.which("git") is None:
        raise SnapshotError(f"repository {repo}: git is not installed: install git")
    _check_source(repo, source)
    if "://" not in source and Path(source).exists():
        source = str(Path(source).resolve())
    mirror = cache_dir / "mirrors" / hashlib.sha256(source.encode()).hexdigest()[:16]
    if not (mirror / "HEAD").exists():
        clone = ["git", "clone", "--bare", "--mirror", "--quiet", source]
        todo = "check the bundle, mirror or URL (repos: in the config)"
        what = f"git clone {source}"
        build_aside(mirror, lambda new: run_command(repo, [*clone, str(new)], what, todo))
    return mirror


def open_repo(
    repo: str,
    commit: str,
    cache_dir: Path,
    *,
    source: str | None = None,
    parent: bool = False,
) -> Snapshot:
    """``repo`` at ``commit`` (``parent``: at ``commit^``) as a tree in the cache."""
    if not _REPO_NAME.match(repo) and source is None:
        raise SnapshotError(f"repository {repo!r} is not owner/name: fix the row's repo")
    commit = commit.strip()
    cache_dir = Path(cache_dir).expanduser().resolve()
    source = source or repo_source(repo)
    mirror = _mirror(repo, source, cache_dir)
    rev = f"{commit}^" if parent else commit
    sha = resolve_commit(mirror, rev)
    if sha is None and resolve_commit(mirror, commit) is None and "://" in source:
        fetch = ["git", "--git-dir", str(mirror), "fetch", "--quiet", source, "+refs/*:refs/*"]
        run_command(repo, fetch, f"git fetch {source}", "check the URL and your network")
        sha = resolve_commit(mirror, rev)
    if sha is None:
        what = "has no parent" if resolve_commit(mirror, commit) else "is not"
        raise SnapshotError(
            f"repository {repo}: commit {commit[:12]} {what} in {source}: "
            "check the row's commit or update the bundle/mirror"
        )
    tree = _tree_of(mirror, sha)
    dest = cache_dir / "repo-trees" / tree
    if not dest.is_dir():
        build_aside(dest, lambda new: _archive(repo, mirror, sha, new))
    short = commit[:12] + ("^" if parent else "")
    return Snapshot(dest, f"{repo}@{short}", "repo", sha)


def _tree_of(mirror: Path, sha: str) -> str:
    cmd = ["git", "--git-dir", str(mirror), "rev-parse", f"{sha}^{{tree}}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    return proc.stdout.strip() or sha


def _archive(repo: str, mirror: Path, sha: str, new: Path) -> None:
    """``git archive sha`` extracted into ``new``."""
    new.mkdir(parents=True)
    tar = new.parent / f"{sha}.tar"
    try:
        cmd = ["git", "--git-dir", str(mirror), "archive", "--format=tar", "-o", str(tar), sha]
        run_command(repo, cmd, f"git archive {sha[:12]}", f"delete {mirror} and retry")
        with tarfile.open(tar) as tf:
            tf.extractall(new, filter="data")
    finally:
        tar.unlink(missing_ok=True)

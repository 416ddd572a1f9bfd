"""The one cache of bare git mirrors (docs/architecture.md#caches).

Every git snapshot reads its repository through a bare mirror in
``cache_dir/mirrors/<sha256(location)[:16]>``: a ``git+URL@commit`` snapshot
(:mod:`retrieval_bench.snapshot`) and a row's ``repo`` + ``commit``
(:mod:`retrieval_bench.snapshot.sources`) that name the same source share one
mirror, cloned once. The location (:func:`location`) is a URL as written, or a
local repository, mirror or git bundle by its absolute path.

:func:`mirror_commits` clones the mirror on first use (``git clone --bare --mirror``,
built aside and renamed into place) and resolves revisions in one
``git cat-file --batch-check``. When one is missing it fetches every ref of the
source once (``+refs/*:refs/*``), then each 40-hex commit still missing by its sha
(a commit no ref points to; not from a bundle, which cannot serve one), kept under
``refs/rbench/<sha>``. Cloning holds an advisory lock on the ``mirrors/`` folder and
fetching one on the mirror, so concurrent runs neither clone a source twice nor fetch
into one mirror at once. A source starting with ``-`` is refused (:func:`check_source`)
and every git command gets ``--`` before it, so a source never reaches git as an option.

Versions before this one kept the mirrors of ``git+URL@commit`` snapshots in
``cache_dir/git/``: that folder is no longer read and can be deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot.build import build_aside, locked, run_command, snapshot_error

MIRRORS = "mirrors"
"""The folder of the cache that holds the mirrors."""
_SHA = re.compile(r"[0-9a-fA-F]{40}")


def location(source: str) -> str:
    """What a mirror of ``source`` is keyed by and cloned from: an existing local path
    made absolute, anything else (a URL) as written."""
    if "://" not in source and Path(source).expanduser().exists():
        return str(Path(source).expanduser().resolve())
    return source


def mirror_path(source: str, cache_dir: Path) -> Path:
    """Where the mirror of ``source`` is (or will be) in the cache."""
    key = hashlib.sha256(location(source).encode()).hexdigest()[:16]
    return Path(cache_dir) / MIRRORS / key


def check_source(source: str, label: str) -> None:
    """Refuse a source that starts with ``-``: git would read it as an option
    (``--upload-pack=<command>`` runs a command). Every git command here also puts
    ``--`` before the source, so this is the clear message, not the only guard."""
    if source.lstrip().startswith("-"):
        raise snapshot_error(
            label,
            f"repository address {source!r} starts with '-'",
            "give a URL, a local path or a git bundle (a relative path: ./-name)",
        )


def open_mirror(source: str, cache_dir: Path, *, label: str, todo: str) -> Path:
    """The bare mirror of ``source``, cloned on first use; a failed clone raises
    ``git clone <location> failed: <why> (from '<label>'): <todo>``."""
    check_source(source, label)
    mirror = mirror_path(source, cache_dir)
    if (mirror / "HEAD").exists():
        return mirror
    where = location(source)
    clone = ["git", "clone", "--bare", "--mirror", "--quiet", "--", where]
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with locked(mirror.parent):
        if not (mirror / "HEAD").exists():  # another process may have cloned it meanwhile
            build_aside(
                mirror,
                lambda new: run_command(label, [*clone, str(new)], f"git clone {where}", todo),
            )
    return mirror


def mirror_commits(
    source: str,
    revs: Sequence[str],
    cache_dir: Path,
    *,
    label: str,
    clone_todo: str,
    fetch_todo: str,
) -> tuple[Path, dict[str, str | None]]:
    """The mirror of ``source`` and each of ``revs`` (a sha, short sha, branch, tag, or
    ``<sha>^``) as its commit sha, None when the source has no such commit.

    A rev the mirror lacks makes one fetch from the source (see the module docstring);
    a fetch that fails raises ``git fetch <location> failed: <why> (from '<label>'):
    <fetch_todo>``.
    """
    mirror = open_mirror(source, cache_dir, label=label, todo=clone_todo)
    found = resolve_commits(mirror, revs)
    if all(sha is not None for sha in found.values()):
        return mirror, found
    with locked(mirror):
        found = resolve_commits(mirror, revs)  # another process may have fetched them
        if any(sha is None for sha in found.values()):
            found = _fetch(mirror, location(source), revs, label, fetch_todo)
    return mirror, found


def _fetch(
    mirror: Path, where: str, revs: Sequence[str], label: str, todo: str
) -> dict[str, str | None]:
    fetch = ["git", "--git-dir", str(mirror), "fetch", "--quiet", "--", where]
    run_command(label, [*fetch, "+refs/*:refs/*"], f"git fetch {where}", todo)
    found = resolve_commits(mirror, revs)
    missing = {rev.rstrip("^") for rev, sha in found.items() if sha is None}
    direct = sorted(s.lower() for s in missing if _SHA.fullmatch(s) and not found.get(s))
    if direct and not Path(where).is_file():
        refspecs = [f"+{sha}:refs/rbench/{sha}" for sha in direct]
        with contextlib.suppress(SnapshotError):  # the source refuses unadvertised commits
            run_command(label, [*fetch, *refspecs], f"git fetch {where} {direct[0]}", todo)
        found = resolve_commits(mirror, revs)
    return found


def resolve_commits(mirror: Path, revs: Sequence[str]) -> dict[str, str | None]:
    """``rev`` → its commit sha (None when the mirror has no such commit), in one
    ``git cat-file --batch-check`` process."""
    if not revs:
        return {}
    cmd = ["git", "--git-dir", str(mirror), "cat-file", "--batch-check=%(objectname) %(objecttype)"]
    lines = "".join(f"{r}^{{commit}}\n" for r in revs if "\n" not in r)
    proc = subprocess.run(cmd, input=lines, capture_output=True, text=True, errors="replace")
    out: dict[str, str | None] = dict.fromkeys(revs)
    answers = proc.stdout.splitlines() if proc.returncode == 0 else []
    for rev, line in zip([r for r in revs if "\n" not in r], answers, strict=False):
        sha, _, kind = line.partition(" ")
        out[rev] = sha if kind == "commit" and len(sha) >= 40 else None
    return out

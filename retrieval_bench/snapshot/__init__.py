"""A repository snapshot: a local folder, a git URL at a commit, or a PyPI sdist
(docs/datasets.md#snapshots).

``open_snapshot(spec, cache_dir)`` gives a working tree on local disk and a fingerprint:

* ``path/to/folder``: used in place; sha256 over the sorted (path, file sha256)
  of the files the ignore rules keep (see :mod:`retrieval_bench.files`).
* ``git+<url>@<commit>`` or ``<url>.git@<commit>``: the bare mirror of the URL in
  ``cache_dir/mirrors/`` (:mod:`retrieval_bench.snapshot.mirrors`, shared with the
  per-question ``repo`` + ``commit`` snapshots; fetched when the commit is missing),
  checked out detached into ``cache_dir/git-trees/<sha>``; the full commit sha.
* ``pypi:<name>==<version>`` or ``<name>==<version>``: the sdist from
  ``offline_dir``, the devsets folder, ``cache_dir/sdists`` or ``pip download``,
  verified and unpacked into ``cache_dir/sdist-trees/<name>-<version>/``; its sha256.

Trees are built in a temporary folder and renamed into place, so an interrupted
clone or unpack never leaves a half tree that a later run would reuse. Every
failure is a one-line :class:`SnapshotError` naming the input and what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from retrieval_bench.errors import SnapshotError
from retrieval_bench.files import IgnoreRules, walk_kept
from retrieval_bench.snapshot.build import build_aside, run_command
from retrieval_bench.snapshot.build import snapshot_error as _fail
from retrieval_bench.snapshot.mirrors import location, mirror_commits

SnapshotKind = Literal["folder", "git", "pypi", "tarball", "repo", "groups"]
"""``groups``: the stand-in of a dataset whose questions have their own snapshots."""

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")
_SDIST_META = ".rbench-sdist.json"
_PYPI_RE = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<version>[^\s=]+)$"
)
_GIT_RE = re.compile(r"^(?P<url>.+\.git)@(?P<rev>[^@/\s]+)$")


@dataclass(frozen=True)
class Snapshot:
    """A repository working tree on local disk and what it was made from."""

    root: Path
    """The working tree (for an sdist: the archive's top folder)."""
    source: str
    """The spec string it was opened from."""
    kind: SnapshotKind
    fingerprint: str
    """Content identity: folder → sha256 of its files, git → commit sha, pypi → sdist sha256."""
    git_dir: Path | None = None
    """The git repository that holds the commit (its bare mirror in the cache), for the
    kinds that are a commit (``git``, ``repo``: ``fingerprint`` is the commit's sha);
    None for the others. The ``history`` stage reads the commit log here
    (docs/stages.md#history)."""


def open_snapshot(
    spec: str,
    cache_dir: Path,
    *,
    expected_sha256: str | None = None,
    offline_dir: Path | None = None,
) -> Snapshot:
    """Open the snapshot named by ``spec``, downloading into ``cache_dir`` when needed."""
    spec, cache_dir = spec.strip(), Path(cache_dir).expanduser().resolve()
    is_path = Path(spec).expanduser().exists()
    if spec.startswith("git+") or (_GIT_RE.match(spec) and not is_path):
        url, _, rev = spec.removeprefix("git+").rpartition("@")
        if not url or not rev or "/" in rev:
            raise _fail(spec, "git snapshot without a commit", "write it as git+<url>@<commit>")
        return _open_git(spec, url, rev, cache_dir)
    pypi = _PYPI_RE.match(spec.removeprefix("pypi:").strip())
    if spec.startswith("pypi:") and not pypi:
        raise _fail(spec, "malformed PyPI snapshot", "write it as pypi:<name>==<version>")
    if pypi and (spec.startswith("pypi:") or not is_path):
        name, version = pypi["name"], pypi["version"]
        return _open_pypi(spec, name, version, cache_dir, expected_sha256, offline_dir)
    return open_folder(Path(spec).expanduser(), source=spec)


# ----------------------------------------------------------------------------- folder


def open_folder(path: Path, source: str | None = None) -> Snapshot:
    """A local folder snapshot, fingerprinted by the content of its non-ignored files."""
    source = source if source is not None else str(path)
    if not path.exists():
        raise SnapshotError(
            f"repository folder {source!r} does not exist: check the path "
            "(or use git+<url>@<commit> / pypi:<name>==<version>)"
        )
    if not path.is_dir():
        raise SnapshotError(f"repository {source!r} is not a directory: give the folder's path")
    if not os.access(path, os.R_OK | os.X_OK):
        raise SnapshotError(f"repository folder {source!r} is not readable: fix its permissions")
    root = path.resolve()
    return Snapshot(root, source, "folder", folder_fingerprint(root))


def folder_fingerprint(root: Path) -> str:
    """sha256 over sorted ``(relative path, file sha256)`` of the files the ignore rules keep."""
    entries: list[tuple[str, str]] = []
    for rel in walk_kept(root, IgnoreRules(root)):
        full = os.path.join(root, rel)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        try:
            entries.append((rel, file_sha256(Path(full))))
        except OSError:
            entries.append((rel, "unreadable"))
    digest = hashlib.sha256()
    for rel, sha in sorted(entries):
        digest.update(f"{rel}\0{sha}\n".encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ----------------------------------------------------------------------------- git


def _open_git(spec: str, url: str, rev: str, cache_dir: Path) -> Snapshot:
    if shutil.which("git") is None:
        raise _fail(spec, "git is not installed", "install git, or use a local folder or sdist")
    todo = "check the URL, your network and credentials"
    mirror, found = mirror_commits(
        url, [rev], cache_dir, label=spec, clone_todo=todo, fetch_todo=todo
    )
    sha = found[rev]
    if sha is None:
        raise _fail(spec, f"commit {rev!r} not found in {location(url)}", "check the commit sha")
    tree = cache_dir / "git-trees" / sha
    if not (tree / ".git").exists():
        build_aside(tree, lambda new: _checkout(spec, mirror, sha, new))
    return Snapshot(tree, spec, "git", sha, git_dir=mirror)


def _checkout(spec: str, mirror: Path, sha: str, work: Path) -> None:
    """A detached checkout of ``sha`` that shares the mirror's objects (``clone --shared``)."""
    todo = f"delete {mirror} and retry"
    clone = ["git", "clone", "--quiet", "--shared", "--no-checkout", "--", str(mirror), str(work)]
    run_command(spec, clone, f"git clone {mirror}", todo)
    checkout = ["git", "-C", str(work), "-c", "advice.detachedHead=false", "checkout", "--quiet"]
    run_command(spec, [*checkout, sha], f"git checkout {sha[:12]}", todo)


# ----------------------------------------------------------------------------- pypi


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def default_devset_dirs() -> list[Path]:
    """Where the shared devsets may be: ``$RBENCH_DEVSETS``, ``$RBENCH_DATA_ROOT/devsets``
    (docs/configuration.md#data-root), /work/shared/..., ../shared/..."""
    dirs = [Path("/work/shared/data/devsets"), Path.cwd().parent / "shared" / "data" / "devsets"]
    env = os.environ.get("RBENCH_DEVSETS")
    root = os.environ.get("RBENCH_DATA_ROOT")
    return ([Path(env)] if env else []) + ([Path(root) / "devsets"] if root else []) + dirs


def devset_manifest_sha(name: str, version: str, devsets_dir: Path | None = None) -> str | None:
    """The sdist sha256 that a devsets ``manifest.json`` records for ``name==version``, if any."""
    dirs = [Path(devsets_dir)] if devsets_dir is not None else default_devset_dirs()
    for folder in dirs:
        try:
            projects = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            projects = dict(projects["projects"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for key, info in projects.items():
            if not isinstance(info, dict) or str(info.get("version")) != version:
                continue
            names = {_canonical(str(key)), _canonical(str(info.get("pypi_name", "")))}
            if _canonical(name) in names and isinstance(info.get("sha256"), str):
                return str(info["sha256"])
    return None


def find_sdist(name: str, version: str, folders: list[Path]) -> Path | None:
    """The first archive named ``<name>-<version>.<ext>`` (names compared canonically)."""
    want = _canonical(f"{name}-{version}")
    for folder in folders:
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            suffix = next((s for s in ARCHIVE_SUFFIXES if entry.name.lower().endswith(s)), None)
            if suffix and entry.is_file() and _canonical(entry.name[: -len(suffix)]) == want:
                return entry
    return None


def _open_pypi(
    spec: str,
    name: str,
    version: str,
    cache_dir: Path,
    expected_sha256: str | None,
    offline_dir: Path | None,
) -> Snapshot:
    expected = expected_sha256.lower() if expected_sha256 else None
    holder = cache_dir / "sdist-trees" / f"{_canonical(name)}-{version}"
    recorded = read_unpack_meta(holder)
    if recorded and expected in (None, recorded["sha256"]):
        return Snapshot(holder / recorded["top"], spec, "pypi", recorded["sha256"])
    sdists = cache_dir / "sdists"
    folders = [Path(offline_dir)] if offline_dir else []
    folders += [d / "sdists" for d in default_devset_dirs()] + [sdists]
    archive = find_sdist(name, version, folders)
    if archive is None:
        sdists.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        cmd += ["--disable-pip-version-check", f"{name}=={version}", "-d", str(sdists)]
        todo = "check the name, version and network, or put the sdist in offline_dir"
        run_command(spec, cmd, f"pip download {name}=={version}", todo)
        archive = find_sdist(name, version, [sdists])
        if archive is None:
            raise _fail(spec, f"pip download left no sdist in {sdists}", todo)
    sha = file_sha256(archive)
    if expected and sha != expected:
        raise _fail(
            spec,
            f"sha256 mismatch for {archive}: expected {expected}, got {sha}",
            "delete the file and download it again, or fix the expected hash",
        )
    top = unpack_archive(spec, archive, holder, sha)
    return Snapshot(holder / top, spec, "pypi", sha)


def read_unpack_meta(holder: Path) -> dict[str, str] | None:
    """What a finished unpack recorded (sha256, top folder), or None if there is none."""
    try:
        meta = json.loads((holder / _SDIST_META).read_text(encoding="utf-8"))
        ok = isinstance(meta["sha256"], str) and (holder / meta["top"]).is_dir()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"sha256": meta["sha256"], "top": meta["top"]} if ok else None


def _member_names(spec: str, archive: Path) -> list[str]:
    """The archive's member names; an absolute or '..' path refuses the whole archive.

    Links that escape the tree and device files are refused by tarfile's ``data`` filter.
    """
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                names = zf.namelist()
        else:
            with tarfile.open(archive) as tf:
                names = tf.getnames()
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _fail(spec, f"cannot read archive {archive}: {exc}", "delete it and retry") from exc
    for name in names:
        path = PurePosixPath(name.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name):
            raise _fail(
                spec,
                f"unsafe path {name!r} in {archive}, refusing to unpack it",
                "the archive is corrupt or malicious: get it from a trusted source",
            )
    return names


def unpack_archive(spec: str, archive: Path, holder: Path, sha: str) -> str:
    """Unpack beside ``holder`` and rename into place; return the root folder's name.

    The root is the archive's single top folder (an archive without one is
    kept whole under ``_content``). A stale tree from another archive is replaced.
    """
    names = _member_names(spec, archive)
    tops = {PurePosixPath(n.replace("\\", "/")).parts[:1] for n in names} - {()}
    top = next(iter(tops))[0] if tops else "_content"

    def build(new: Path) -> None:
        content = new / "_content"
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(content)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(content, filter="data")
        root = "_content"
        if len(tops) == 1 and (content / top).is_dir():
            os.rename(content / top, new / top)
            content.rmdir()
            root = top
        meta = {"sha256": sha, "top": root, "archive": archive.name}
        (new / _SDIST_META).write_text(json.dumps(meta), encoding="utf-8")
        if holder.exists():  # stale: move it out of the way, the rename below replaces it
            shutil.rmtree(holder)

    try:
        build_aside(holder, build)
    except tarfile.FilterError as exc:
        raise _fail(spec, f"unsafe member in {archive}: {exc}", "refusing to unpack it") from exc
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _fail(spec, f"cannot unpack {archive}: {exc}", "check disk space and rights") from exc
    recorded = read_unpack_meta(holder)
    if recorded is None:
        raise _fail(spec, f"unpacking {archive} left no tree in {holder}", "delete it and retry")
    return recorded["top"]

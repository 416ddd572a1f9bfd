"""A repository snapshot: a local folder, a git URL at a commit, or a PyPI sdist (SPEC §2).

``open_snapshot(spec, cache_dir)`` turns a spec string into a working tree on
local disk plus a fingerprint that identifies its content:

* ``path/to/folder`` — used in place; fingerprint = sha256 over the sorted
  ``(relative path, file sha256)`` pairs of the files the ignore rules keep
  (``.gitignore``, ``.rbenchignore``, see :mod:`retrieval_bench.files`).
* ``git+<url>@<commit>`` or ``<url>.git@<commit>`` — cloned (bare) once into
  ``cache_dir/git/<hash of url>``, fetched when the commit is missing, and
  checked out detached into ``cache_dir/git-trees/<commit sha>``; fingerprint =
  the full commit sha.
* ``pypi:<name>==<version>`` or ``<name>==<version>`` — the sdist archive is
  taken from ``offline_dir``, the devsets folder or ``cache_dir/sdists``, or
  else downloaded with ``pip download``; it is verified against
  ``expected_sha256`` when given and unpacked safely into
  ``cache_dir/sdist-trees/<name>-<version>/``; fingerprint = the archive's sha256.

Trees are built in a temporary folder and renamed into place, so an
interrupted clone or unpack never leaves a half tree where a later run would
reuse it. Every failure is a one-line :class:`SnapshotError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from retrieval_bench.errors import SnapshotError
from retrieval_bench.files import IgnoreRules

SnapshotKind = Literal["folder", "git", "pypi"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")
_SDIST_META = ".rbench-sdist.json"
_PYPI_RE = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<version>[^\s=]+)$"
)
_GIT_RE = re.compile(r"^(?P<url>.+\.git)@(?P<rev>[^@/\s]+)$")
_TIMEOUT_S = 900


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


def open_snapshot(
    spec: str,
    cache_dir: Path,
    *,
    expected_sha256: str | None = None,
    offline_dir: Path | None = None,
) -> Snapshot:
    """Open the snapshot named by ``spec``, downloading into ``cache_dir`` when needed."""
    spec = spec.strip()
    cache_dir = Path(cache_dir)
    if spec.startswith("pypi:"):
        name, version = _parse_pypi(spec, spec[len("pypi:") :])
        return _open_pypi(spec, name, version, cache_dir, expected_sha256, offline_dir)
    if spec.startswith("git+"):
        url, rev = _parse_git(spec, spec[len("git+") :])
        return _open_git(spec, url, rev, cache_dir)
    git_match = _GIT_RE.match(spec)
    if git_match and not Path(spec).exists():
        return _open_git(spec, git_match["url"], git_match["rev"], cache_dir)
    pypi_match = _PYPI_RE.match(spec)
    if pypi_match and not Path(spec).exists():
        return _open_pypi(
            spec, pypi_match["name"], pypi_match["version"], cache_dir, expected_sha256, offline_dir
        )
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
    rules = IgnoreRules(root)
    entries: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        rules.add_dir(rel_dir)
        dirnames[:] = [
            d
            for d in sorted(dirnames)
            if not os.path.islink(os.path.join(dirpath, d))
            and not rules.ignored(f"{rel_dir}/{d}" if rel_dir else d, is_dir=True)
        ]
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = os.path.join(dirpath, name)
            if rules.ignored(rel) or os.path.islink(full) or not os.path.isfile(full):
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


def _parse_git(spec: str, rest: str) -> tuple[str, str]:
    url, sep, rev = rest.rpartition("@")
    if not sep or not url or not rev or "/" in rev:
        raise SnapshotError(
            f"git snapshot {spec!r} has no commit: write it as git+<url>@<commit sha>"
        )
    return url, rev


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run a command quietly (never prompting for credentials); a timeout is a SnapshotError."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(
            cmd, env=env, capture_output=True, text=True, errors="replace", timeout=_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise SnapshotError(f"{what} timed out after {_TIMEOUT_S}s: check your network") from exc


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(["git", *args], f"git {args[0] if args[0] != '--git-dir' else args[2]}")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no error output"


def _open_git(spec: str, url: str, rev: str, cache_dir: Path) -> Snapshot:
    if shutil.which("git") is None:
        raise SnapshotError(
            f"cannot open {spec!r}: git is not installed; install git or use a local folder"
        )
    if "://" not in url and not url.startswith("git@") and Path(url).expanduser().exists():
        url = str(Path(url).expanduser().resolve())
    mirror = cache_dir / "git" / hashlib.sha256(url.encode()).hexdigest()[:16]
    if not (mirror / "HEAD").exists():
        _clone_bare(spec, url, mirror)
    sha = _resolve_commit(mirror, rev)
    if sha is None:
        _fetch(spec, url, mirror, rev)
        sha = _resolve_commit(mirror, rev)
    if sha is None:
        raise SnapshotError(
            f"commit {rev!r} not found in {url!r} (from {spec!r}): check the commit sha"
        )
    tree = cache_dir / "git-trees" / sha
    if not (tree / ".git").exists():
        _checkout(spec, mirror, sha, tree)
    return Snapshot(tree, spec, "git", sha)


def _clone_bare(spec: str, url: str, mirror: Path) -> None:
    mirror.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{mirror.name}-", dir=mirror.parent))
    try:
        proc = _git("clone", "--bare", "--quiet", url, str(tmp / "repo"))
        if proc.returncode != 0:
            raise SnapshotError(
                f"git clone of {url!r} (from {spec!r}) failed: {_last_line(proc.stderr)}; "
                "check the URL and your network"
            )
        _move_into_place(tmp / "repo", mirror)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch(spec: str, url: str, mirror: Path, rev: str) -> None:
    refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    proc = _git("--git-dir", str(mirror), "fetch", "--quiet", url, *refspecs)
    if proc.returncode != 0:
        raise SnapshotError(
            f"git fetch of {url!r} (from {spec!r}) failed: {_last_line(proc.stderr)}; "
            "check the URL and your network"
        )
    if _resolve_commit(mirror, rev) is None and re.fullmatch(r"[0-9a-fA-F]{40}", rev):
        # servers that allow it can send a commit no branch or tag points to
        _git("--git-dir", str(mirror), "fetch", "--quiet", url, rev)


def _resolve_commit(mirror: Path, rev: str) -> str | None:
    proc = _git("--git-dir", str(mirror), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


def _checkout(spec: str, mirror: Path, sha: str, tree: Path) -> None:
    """A detached checkout sharing the mirror's objects, built aside and renamed into place."""
    tree.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{sha[:12]}-", dir=tree.parent))
    try:
        work = tmp / "tree"
        steps = (
            ("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(work)),
            ("-C", str(work), "-c", "advice.detachedHead=false", "checkout", "--quiet", sha),
        )
        for args in steps:
            proc = _git(*args)
            if proc.returncode != 0:
                raise SnapshotError(
                    f"checkout of commit {sha[:12]} (from {spec!r}) failed: "
                    f"{_last_line(proc.stderr)}; delete {tree.parent} and retry"
                )
        _move_into_place(work, tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _move_into_place(src: Path, dest: Path) -> None:
    """Rename ``src`` to ``dest``; if another process won the race, keep theirs."""
    try:
        os.rename(src, dest)
    except OSError:
        if not dest.exists():
            raise


# ----------------------------------------------------------------------------- pypi


def _parse_pypi(spec: str, rest: str) -> tuple[str, str]:
    match = _PYPI_RE.match(rest.strip())
    if not match:
        raise SnapshotError(
            f"PyPI snapshot {spec!r} is malformed: write it as pypi:<name>==<version>"
        )
    return match["name"], match["version"]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def default_devset_dirs() -> list[Path]:
    """Where the shared devsets may live: ``$RBENCH_DEVSETS``, /work/shared/..., ../shared/..."""
    dirs = [Path("/work/shared/data/devsets"), Path.cwd().parent / "shared" / "data" / "devsets"]
    env = os.environ.get("RBENCH_DEVSETS")
    return ([Path(env)] if env else []) + dirs


def devset_manifest_sha(name: str, version: str, devsets_dir: Path | None = None) -> str | None:
    """The sdist sha256 recorded for ``name==version`` in a devsets ``manifest.json``, if any."""
    dirs = [Path(devsets_dir)] if devsets_dir is not None else default_devset_dirs()
    for folder in dirs:
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        projects = manifest.get("projects", {}) if isinstance(manifest, dict) else {}
        for key, info in projects.items() if isinstance(projects, dict) else ():
            if not isinstance(info, dict) or str(info.get("version")) != version:
                continue
            names = {_canonical(str(key)), _canonical(str(info.get("pypi_name", "")))}
            if _canonical(name) in names and isinstance(info.get("sha256"), str):
                return str(info["sha256"])
    return None


def find_sdist(name: str, version: str, folders: list[Path]) -> Path | None:
    """The first archive named ``<name>-<version>.<ext>`` (name compared canonically) in folders."""
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
    key = f"{_canonical(name)}-{version}"
    holder = cache_dir / "sdist-trees" / key
    recorded = _read_sdist_meta(holder)
    if recorded and (expected is None or recorded["sha256"] == expected):
        return Snapshot(holder / recorded["top"], spec, "pypi", recorded["sha256"])
    sdists = cache_dir / "sdists"
    folders = ([Path(offline_dir)] if offline_dir else []) + [
        d / "sdists" for d in default_devset_dirs()
    ]
    archive = find_sdist(name, version, folders + [sdists])
    if archive is None:
        archive = _pip_download(spec, name, version, sdists)
    sha = file_sha256(archive)
    if expected and sha != expected:
        raise SnapshotError(
            f"sha256 mismatch for {archive} (from {spec!r}): expected {expected}, got {sha}; "
            "delete the file and download it again, or fix the expected hash"
        )
    top = _unpack(spec, archive, holder, sha)
    return Snapshot(holder / top, spec, "pypi", sha)


def _read_sdist_meta(holder: Path) -> dict[str, str] | None:
    try:
        meta = json.loads((holder / _SDIST_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        return None
    top = meta.get("top")
    if not isinstance(top, str) or not (holder / top).is_dir():
        return None
    return {"sha256": meta["sha256"], "top": top}


def _pip_download(spec: str, name: str, version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    cmd += ["--disable-pip-version-check", f"{name}=={version}", "-d", str(dest)]
    proc = _run(cmd, f"pip download of {name}=={version} (from {spec!r})")
    if proc.returncode != 0:
        raise SnapshotError(
            f"pip download of {name}=={version} (from {spec!r}) failed: "
            f"{_last_line(proc.stderr)}; check the name, version and network, "
            "or put the sdist in offline_dir"
        )
    archive = find_sdist(name, version, [dest])
    if archive is None:
        raise SnapshotError(
            f"pip download of {name}=={version} (from {spec!r}) left no sdist in {dest}: "
            "the project may publish no source distribution for this version"
        )
    return archive


def _member_paths(spec: str, archive: Path) -> list[PurePosixPath]:
    """The archive's member paths; an absolute or '..' path refuses the whole archive.

    Links that escape and device files are refused by tarfile's ``data`` filter.
    """
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
    else:
        with tarfile.open(archive) as tf:
            names = tf.getnames()
    for name in names:
        path = PurePosixPath(name.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name):
            raise SnapshotError(
                f"unsafe path {name!r} in {archive} (from {spec!r}): refusing to unpack it; "
                "the archive is corrupt or malicious, get it from a trusted source"
            )
    return [PurePosixPath(n.replace("\\", "/")) for n in names]


def _unpack(spec: str, archive: Path, holder: Path, sha: str) -> str:
    """Unpack into a temp folder beside ``holder`` and rename; return the root folder name.

    The root is the archive's single top folder; an archive without one is
    kept whole under ``_content``.
    """
    try:
        members = _member_paths(spec, archive)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SnapshotError(
            f"cannot read archive {archive} (from {spec!r}): {exc}; delete it and download again"
        ) from exc
    tops = {p.parts[0] for p in members if p.parts}
    holder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{holder.name}-", dir=holder.parent))
    try:
        content = tmp / "_content"
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(content)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(content, filter="data")
        top = "_content"
        if len(tops) == 1 and (content / next(iter(tops))).is_dir():
            top = next(iter(tops))
            os.rename(content / top, tmp / top)
            content.rmdir()
        meta = {"sha256": sha, "top": top, "archive": archive.name}
        (tmp / _SDIST_META).write_text(json.dumps(meta), encoding="utf-8")
        if holder.exists():  # a stale tree from another archive: swap it out
            stale = Path(tempfile.mkdtemp(prefix=f".old-{holder.name}-", dir=holder.parent))
            os.rename(holder, stale / "tree")
            shutil.rmtree(stale, ignore_errors=True)
        _move_into_place(tmp, holder)
    except tarfile.FilterError as exc:
        raise SnapshotError(
            f"unsafe member in {archive} (from {spec!r}): {exc}; refusing to unpack it"
        ) from exc
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SnapshotError(
            f"cannot unpack {archive} (from {spec!r}): {exc}; check disk space and permissions"
        ) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return top

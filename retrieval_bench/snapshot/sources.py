"""Per-question snapshots: tarballs and ``owner/name@commit`` through a local mirror
(docs/datasets.md#per-question-snapshots).

* :func:`open_tarball`: a ``.tar.gz``/``.tgz``/``.tar`` file, sha256-checked when a
  hash is given, unpacked once into ``cache_dir/tarball-trees/<sha256>`` (a single
  top folder is stripped); the fingerprint is the archive's sha256.
* :func:`open_repo`: ``owner/name`` at a commit (or its parent). The repository's
  source is a local git bundle, a local repository or a URL (default
  ``https://github.com/<owner>/<name>.git``; :func:`repo_locations` reads the
  overrides). It is read through its bare mirror in ``cache_dir/mirrors/``, the one
  mirror cache ``git+URL@commit`` snapshots share (:mod:`retrieval_bench.snapshot.mirrors`:
  cloned once, fetched once when a commit is missing); the commit's tree is made once
  in ``cache_dir/repo-trees/<tree sha>`` (content-keyed: two commits with one tree
  share it), its files hardlinked from the read-only blob store ``cache_dir/repo-blobs/``
  (each blob written once, so an extra tree costs its folders on disk), else
  ``git archive``-d (:func:`_archive`); the fingerprint is the commit sha.

Every failure is a one-line :class:`SnapshotError` naming the input.

Size: the tree store of :func:`open_repo` (:func:`_archive` and its helpers: what
``git archive`` would convert, the blob store, the links) stays beside its one caller.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import Snapshot, file_sha256, read_unpack_meta, unpack_archive
from retrieval_bench.snapshot.build import build_aside, run_command
from retrieval_bench.snapshot.mirrors import check_source, mirror_commits, mirror_path
from retrieval_bench.store.io import write_bytes_atomically

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


def resolve_repo_commits(
    repo: str,
    commits: Sequence[str],
    cache_dir: Path,
    *,
    source: str | None = None,
    parent: bool = False,
) -> dict[str, str | SnapshotError]:
    """Each of ``commits`` (``parent``: its parent) as a full commit sha, or the
    one-line :class:`SnapshotError` saying why it cannot be.

    One ``git cat-file --batch-check`` for all of them (a run over hundreds of
    questions resolves them in milliseconds, before any tree is extracted), through
    the one mirror cache (:mod:`retrieval_bench.snapshot.mirrors`): the mirror is
    fetched from its source once when some commit is missing. A source that cannot
    be mirrored or fetched from raises.
    """
    if not _REPO_NAME.match(repo) and source is None:
        raise SnapshotError(f"repository {repo!r} is not owner/name: fix the row's repo")
    source = source or repo_source(repo)
    if shutil.which("git") is None:
        raise SnapshotError(f"repository {repo}: git is not installed: install git")
    check_source(source, repo)
    _check_source(repo, source)
    wanted = [c.strip() for c in commits]
    revs = [f"{c}^" if parent else c for c in wanted]
    clone_todo = "check the bundle, mirror or URL (repos: in the config)"
    fetch_todo = "check the URL and your network" if "://" in source else clone_todo
    cache_dir = Path(cache_dir).expanduser().resolve()
    _, found = mirror_commits(
        source,
        [*revs, *wanted],
        cache_dir,
        label=repo,
        clone_todo=clone_todo,
        fetch_todo=fetch_todo,
    )
    out: dict[str, str | SnapshotError] = {}
    for commit, rev in zip(wanted, revs, strict=True):
        sha = found.get(rev)
        if sha is None:
            what = "has no parent" if found.get(commit) else "is not"
            sha_or_error: str | SnapshotError = SnapshotError(
                f"repository {repo}: commit {commit[:12]} {what} in {source}: "
                "check the row's commit or update the bundle/mirror"
            )
        else:
            sha_or_error = sha
        out[commit] = sha_or_error
    return out


def open_repo(
    repo: str,
    commit: str,
    cache_dir: Path,
    *,
    source: str | None = None,
    parent: bool = False,
) -> Snapshot:
    """``repo`` at ``commit`` (``parent``: at ``commit^``) as a tree in the cache."""
    cache_dir = Path(cache_dir).expanduser().resolve()
    resolved = resolve_repo_commits(repo, [commit], cache_dir, source=source, parent=parent)
    sha = resolved[commit.strip()]
    if isinstance(sha, SnapshotError):
        raise sha
    mirror = mirror_path(source or repo_source(repo), cache_dir)
    tree = _tree_of(mirror, sha)
    dest = cache_dir / "repo-trees" / tree
    if not dest.is_dir():
        build_aside(dest, lambda new: _archive(repo, mirror, sha, new))
    short = commit.strip()[:12] + ("^" if parent else "")
    return Snapshot(dest, f"{repo}@{short}", "repo", sha, git_dir=mirror)


def _tree_of(mirror: Path, sha: str) -> str:
    cmd = ["git", "--git-dir", str(mirror), "rev-parse", f"{sha}^{{tree}}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    return proc.stdout.strip() or sha


def _archive(repo: str, mirror: Path, sha: str, new: Path) -> None:
    """The tree of ``sha`` into ``new``: its files hardlinked from the blob store
    (:func:`_link_tree`), or, where git would convert some file (attributes, autocrlf)
    or the tree has symlinks or submodules, or ``$RBENCH_TREE_LINKS`` is ``0``,
    ``git archive sha`` extracted."""
    if os.environ.get(TREE_LINKS_ENV, "1").strip().lower() not in ("0", "false", "no", "off"):
        entries = _plain_entries(mirror, sha)
        if entries is not None:
            _link_tree(repo, mirror, sha, entries, new)
            return
    new.mkdir(parents=True)
    _extract_archive(repo, mirror, sha, new)


def _extract_archive(
    repo: str, mirror: Path, sha: str, new: Path, paths: Sequence[str] = ()
) -> None:
    """``git archive sha [-- paths]`` extracted into the folder ``new``."""
    tar = new.parent / f"{sha}.{os.getpid()}.tar"
    try:
        cmd = ["git", "--git-dir", str(mirror), "--literal-pathspecs", "archive", "--format=tar"]
        cmd += ["-o", str(tar), sha, *(["--", *paths] if paths else [])]
        run_command(repo, cmd, f"git archive {sha[:12]}", f"delete {mirror} and retry")
        with tarfile.open(tar) as tf:
            tf.extractall(new, filter="data")
    finally:
        tar.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- tree links

TREE_LINKS_ENV = "RBENCH_TREE_LINKS"
_CONVERTING = ("text", "eol", "crlf", "ident", "filter", "working-tree-encoding",
               "export-ignore", "export-subst")  # fmt: skip
"""Attributes under which ``git archive`` writes other bytes than the blob's (or none)."""


def _git_lines(
    mirror: Path, args: Sequence[str], stdin: bytes = b"", env: Mapping[str, str] | None = None
) -> list[bytes] | None:
    """NUL-separated output of a git command, or None when it fails."""
    cmd = ["git", "--git-dir", str(mirror), *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
    return proc.stdout.split(b"\0")[:-1] if proc.returncode == 0 else None


def _plain_entries(mirror: Path, sha: str) -> list[tuple[str, str, bool, bool]] | None:
    """``(path, blob sha, executable, via archive)`` for every file of the tree, or None
    when the tree must be ``git archive``-d whole: a symlink, a submodule, an odd path,
    ``core.autocrlf`` on, a folder with an attribute of :data:`_CONVERTING`, or most files
    converted. ``via archive``: ``git archive`` writes other bytes than the blob's."""
    listed = _git_lines(mirror, ["ls-tree", "-r", "-z", "--full-tree", sha])
    config = _git_lines(mirror, ["config", "-z", "--get-regexp", r"^core\.(autocrlf|eol)$"])
    settings = dict(c.decode(errors="replace").lower().partition("\n")[::2] for c in config or [])
    if not listed or settings.get("core.autocrlf") in ("true", "yes", "on", "1"):
        return None
    files: list[tuple[str, str, bool]] = []
    for line in listed:
        meta, _, raw = line.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        path = os.fsdecode(raw)
        if kind != "blob" or mode not in ("100644", "100755") or "\n" in path:
            return None
        if any(part in ("", ".", "..", ".git") for part in path.split("/")):
            return None
        files.append((path, blob, mode == "100755"))
    converted = _converted_paths(mirror, sha, [f[0] for f in files], settings.get("core.eol"))
    if converted is None or 2 * len(converted) > len(files):
        return None
    return [(path, blob, ex, path in converted) for path, blob, ex in files]


def _converted_paths(
    mirror: Path, sha: str, paths: Sequence[str], core_eol: str | None
) -> set[str] | None:
    """The paths whose bytes ``git archive`` changes (on a system whose native line end
    is LF), by their attributes read as ``git archive`` reads them: the tree's own
    ``.gitattributes`` (through a temporary index of the tree), the repository's and the
    user's attribute files. None when a folder has an attribute of :data:`_CONVERTING`."""
    import tempfile

    folders = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    with tempfile.TemporaryDirectory(prefix="rbench-attr-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if _git_lines(mirror, ["read-tree", sha], env=env) is None:
            return None
        asked = [*paths, *sorted(folders), *(f + "/" for f in sorted(folders))]
        stdin = b"".join(os.fsencode(p) + b"\0" for p in asked)
        out = _git_lines(mirror, ["check-attr", "--cached", "-z", "--stdin", *_CONVERTING],
                         stdin, env)  # fmt: skip
    if out is None or len(out) % 3:
        return None
    attrs: dict[str, dict[str, str]] = {}
    for i in range(0, len(out), 3):
        value = out[i + 2].decode(errors="replace")
        if value != "unspecified":
            attrs.setdefault(os.fsdecode(out[i]), {})[out[i + 1].decode()] = value
    if any(p.rstrip("/") in folders for p in attrs):
        return None
    return {p for p, a in attrs.items() if _converts(a, core_eol)}


def _converts(attrs: Mapping[str, str], core_eol: str | None) -> bool:
    """Whether git's checkout conversion changes a file with ``attrs`` (its specified
    attributes of :data:`_CONVERTING`): an ``ident``, ``filter``, encoding or export
    attribute, or line ends turned into CRLF (``eol=crlf``, or ``core.eol=crlf`` for a
    text file); ``-text``/``-crlf`` is binary."""
    if any(attrs.get(a, "unset") != "unset" for a in _CONVERTING[3:]):
        return True
    if "unset" in (attrs.get("text"), attrs.get("crlf")):
        return False
    return attrs.get("eol") == "crlf" or (core_eol == "crlf" and bool(attrs))


def _blob_path(store: str, blob: str, executable: bool) -> str:
    """``<store>/<blob sha[:2]>/<rest>``, ``.x`` when executable (plain strings: a tree
    has thousands of files)."""
    return f"{store}/{blob[:2]}/{blob[2:]}{'.x' if executable else ''}"


def _link_tree(repo: str, mirror: Path, sha: str, entries: Sequence[tuple[str, str, bool, bool]],
               new: Path) -> None:  # fmt: skip
    """``new`` from hardlinks into the blob store (first given the blobs it lacks, in one
    ``git cat-file --batch``), a copy where the file system will not link (another device,
    too many links); the files marked ``via archive`` from ``git archive``."""
    store = str(Path(mirror).parent.parent / "repo-blobs")
    linked = [e for e in entries if not e[3]]
    exists = os.path.exists
    missing = {(blob, ex) for _, blob, ex, _ in linked if not exists(_blob_path(store, blob, ex))}
    _fill_store(repo, mirror, store, missing)
    new.mkdir(parents=True)
    root, made = str(new), {""}
    for path, blob, ex, _ in linked:
        folder = path.rpartition("/")[0]
        if folder not in made:
            os.makedirs(f"{root}/{folder}", exist_ok=True)
            made.add(folder)
        source, target = _blob_path(store, blob, ex), f"{root}/{path}"
        try:
            os.link(source, target)
        except OSError:
            try:
                shutil.copyfile(source, target)
                os.chmod(target, 0o755 if ex else 0o644)
            except OSError as exc:
                raise SnapshotError(f"repository {repo}: cannot write {target}: {exc}") from exc
    archived = [e[0] for e in entries if e[3]]
    if archived:
        _extract_archive(repo, mirror, sha, new, archived)


def _fill_store(repo: str, mirror: Path, store: str, blobs: set[tuple[str, bool]]) -> None:
    """Write ``blobs`` (sha, executable) into the store: read-only files, each written
    aside and renamed into place, so a reader never sees half a blob."""
    if not blobs:
        return
    wanted: dict[str, list[bool]] = {}
    for blob, ex in sorted(blobs):
        wanted.setdefault(blob, []).append(ex)
    import tempfile

    cmd = ["git", "--git-dir", str(mirror), "cat-file", "--batch"]
    with tempfile.TemporaryFile() as feed:
        feed.write("".join(f"{b}\n" for b in wanted).encode())
        feed.seek(0)
        proc = subprocess.Popen(cmd, stdin=feed, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        for blob, modes in wanted.items():
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob" or header[0].decode() != blob:
                raise SnapshotError(
                    f"repository {repo}: git cat-file cannot read blob {blob[:12]}: "
                    f"delete {mirror} and retry"
                )
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after the content
            for ex in modes:
                _store_blob(_blob_path(store, blob, ex), data, ex)
    finally:
        proc.stdout.close()
        proc.wait()


def _store_blob(dest: str, data: bytes, executable: bool) -> None:
    """Write one blob, read-only: not fsync-ed one by one (a tree is thousands of
    blobs; as before, the rename alone keeps a reader from half a blob)."""
    mode = 0o555 if executable else 0o444
    try:
        write_bytes_atomically(dest, data, mode=mode, sync=False)
    except FileNotFoundError:  # its folder is new (made here, not tried for every blob)
        os.makedirs(dest.rpartition("/")[0], exist_ok=True)
        write_bytes_atomically(dest, data, mode=mode, sync=False)

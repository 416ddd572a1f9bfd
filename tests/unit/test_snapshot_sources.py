"""Per-question snapshot kinds: tarballs and repo@commit through a bundle or mirror
(docs/datasets.md#per-question-snapshots)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import file_sha256
from retrieval_bench.snapshot.sources import (
    open_repo,
    open_tarball,
    repo_locations,
    repo_source,
)


def _tarball(path: Path, files: dict[str, str], top: str | None = "proj-1") -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_tarball_unpacked_once_top_folder_stripped(tmp_path: Path) -> None:
    tar = _tarball(tmp_path / "p.tar.gz", {"src/a.py": "x = 1\n"})
    sha = file_sha256(tar)
    snap = open_tarball(tar, tmp_path / "cache", expected_sha256=sha)
    assert snap.kind == "tarball" and snap.fingerprint == sha
    assert (snap.root / "src" / "a.py").read_text() == "x = 1\n"
    assert snap.root.name == "proj-1"
    (snap.root / "marker").write_text("kept")  # a second open reuses the tree
    assert (open_tarball(tar, tmp_path / "cache").root / "marker").exists()


def test_tarball_sha_mismatch_and_unreadable(tmp_path: Path) -> None:
    tar = _tarball(tmp_path / "p.tgz", {"a.py": "x\n"})
    with pytest.raises(SnapshotError, match="sha256 mismatch"):
        open_tarball(tar, tmp_path / "cache", expected_sha256="0" * 64)
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball at all")
    with pytest.raises(SnapshotError, match="cannot read archive") as exc:
        open_tarball(bad, tmp_path / "cache")
    assert "\n" not in str(exc.value)
    with pytest.raises(SnapshotError, match="does not exist"):
        open_tarball(tmp_path / "missing.tar.gz", tmp_path / "cache")


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x", "HOME": str(cwd), "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def bundle(tmp_path: Path) -> tuple[Path, str, str]:
    """A bundle of a two-commit repository: (bundle, first sha, second sha)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("v = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "a.py").write_text("v = 2\n")
    (repo / "b.py").write_text("w = 2\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "two")
    second = _git(repo, "rev-parse", "HEAD")
    out = tmp_path / "repo.bundle"
    _git(repo, "bundle", "create", str(out), "--all")
    return out, first, second


def test_repo_at_commit_and_parent(tmp_path: Path, bundle: tuple[Path, str, str]) -> None:
    path, first, second = bundle
    cache = tmp_path / "cache"
    at = open_repo("org/proj", second, cache, source=str(path))
    assert at.kind == "repo" and at.fingerprint == second
    assert (at.root / "a.py").read_text() == "v = 2\n" and (at.root / "b.py").exists()
    before = open_repo("org/proj", second, cache, source=str(path), parent=True)
    assert before.fingerprint == first and before.source == f"org/proj@{second[:12]}^"
    assert (before.root / "a.py").read_text() == "v = 1\n" and not (before.root / "b.py").exists()
    assert len(list((cache / "mirrors").iterdir())) == 1  # one mirror for both states
    again = open_repo("org/proj", first, cache, source=str(path))
    assert again.root == before.root  # content-keyed: the same tree, unpacked once


def test_repo_missing_commit_and_root_parent(tmp_path: Path, bundle: tuple[Path, str, str]) -> None:
    path, first, _ = bundle
    with pytest.raises(SnapshotError, match="commit deadbeefdead is not in") as exc:
        open_repo("org/proj", "deadbeef" * 5, tmp_path / "c", source=str(path))
    assert "\n" not in str(exc.value)
    with pytest.raises(SnapshotError, match="has no parent"):
        open_repo("org/proj", first, tmp_path / "c", source=str(path), parent=True)


def test_not_a_bundle(tmp_path: Path) -> None:
    fake = tmp_path / "fake.bundle"
    fake.write_text("hello\n")
    with pytest.raises(SnapshotError, match="is not a git bundle"):
        open_repo("org/proj", "a" * 40, tmp_path / "c", source=str(fake))
    with pytest.raises(SnapshotError, match="does not exist"):
        open_repo("org/proj", "a" * 40, tmp_path / "c", source=str(tmp_path / "nope.bundle"))


def test_repo_locations_env_overrides_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RBENCH_REPOS", "a/b=/x/b.bundle, c/d=/y/d")
    found = repo_locations({"a/b": "/cfg/b.bundle", "e/f": "/cfg/f"})
    assert found == {"a/b": "/x/b.bundle", "c/d": "/y/d", "e/f": "/cfg/f"}
    assert repo_source("e/f", found) == "/cfg/f"
    assert repo_source("pallets/flask", found) == "https://github.com/pallets/flask.git"


def _files(root: Path) -> dict[str, tuple[bytes | str, bool]]:
    """Every entry under ``root``: a file's bytes and executable bit, a link's target."""
    out: dict[str, tuple[bytes | str, bool]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = (os.readlink(path), False)
        elif path.is_file():
            out[rel] = (path.read_bytes(), bool(path.stat().st_mode & 0o111))
    return out


@pytest.fixture
def converting(tmp_path: Path) -> tuple[Path, str, str]:
    """A bundle whose files git archive converts (eol=crlf, export-subst, export-ignore),
    with an executable, in two commits that differ in one file."""
    repo = tmp_path / "conv"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text(
        "*.bat text eol=crlf\nversion.txt export-subst\nsecret.txt export-ignore\n"
    )
    (repo / "run.bat").write_text("echo one\necho two\n")
    (repo / "version.txt").write_text("commit $Format:%H$\n")
    (repo / "secret.txt").write_text("not in an archive\n")
    (repo / "pkg" / "a.py").write_text("v = 1\n")
    (repo / "pkg" / "same.py").write_text("s = 0\n")
    (repo / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "tool.sh").chmod(0o755)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "pkg" / "a.py").write_text("v = 2\n")
    _git(repo, "commit", "-q", "-am", "two")
    second = _git(repo, "rev-parse", "HEAD")
    out = tmp_path / "conv.bundle"
    _git(repo, "bundle", "create", str(out), "--all")
    return out, first, second


def test_repo_tree_links_equal_git_archive(
    tmp_path: Path, converting: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, first, second = converting
    linked = tmp_path / "linked"
    a = open_repo("org/conv", first, linked, source=str(path))
    b = open_repo("org/conv", second, linked, source=str(path))
    monkeypatch.setenv("RBENCH_TREE_LINKS", "0")
    plain = tmp_path / "plain"
    for sha, tree in ((first, a.root), (second, b.root)):
        archived = open_repo("org/conv", sha, plain, source=str(path)).root
        assert _files(tree) == _files(archived)  # bytes, executable bits, file set
    assert not (plain / "repo-blobs").exists()
    assert (a.root / "run.bat").read_bytes() == b"echo one\r\necho two\r\n"  # eol=crlf
    assert (a.root / "version.txt").read_text() == f"commit {first}\n"  # export-subst
    assert not (a.root / "secret.txt").exists()  # export-ignore
    assert (a.root / "tool.sh").stat().st_mode & 0o111
    # an unchanged file is one read-only inode in the blob store, shared by both trees
    same_a, same_b = (a.root / "pkg" / "same.py").stat(), (b.root / "pkg" / "same.py").stat()
    assert same_a.st_ino == same_b.st_ino and not same_a.st_mode & 0o222
    assert (a.root / "pkg" / "a.py").read_text() == "v = 1\n"
    assert (b.root / "pkg" / "a.py").read_text() == "v = 2\n"
    assert len(list((linked / "repo-blobs").rglob("*"))) > 0


def test_a_tree_with_a_symlink_is_archived_whole(tmp_path: Path) -> None:
    repo = tmp_path / "sym"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("v = 1\n")
    os.symlink("a.py", repo / "link.py")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    bundle = tmp_path / "sym.bundle"
    _git(repo, "bundle", "create", str(bundle), "--all")
    snap = open_repo("org/sym", sha, tmp_path / "cache", source=str(bundle))
    assert (snap.root / "link.py").is_symlink() and (snap.root / "a.py").read_text() == "v = 1\n"
    assert not (tmp_path / "cache" / "repo-blobs").exists()

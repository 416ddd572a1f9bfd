"""Snapshots: local folders, git URL@commit, PyPI sdists (offline archives made here)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import stat
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import (
    devset_manifest_sha,
    find_sdist,
    folder_fingerprint,
    open_snapshot,
)
from tests.unit.datasets.gitrepo import GitRepo, needs_git

# ----------------------------------------------------------------------------- folder


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def a():\n    return 1\n")
    (root / "README.md").write_text("hello\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("generated\n")
    (root / "run.log").write_text("noise\n")
    return root


def test_folder_fingerprint_is_stable_and_tracks_content(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    first = open_snapshot(str(root), tmp_path / "cache")
    assert first.kind == "folder"
    assert first.root == root.resolve()
    assert first.source == str(root)
    assert len(first.fingerprint) == 64
    assert open_snapshot(str(root), tmp_path / "cache").fingerprint == first.fingerprint

    (root / "pkg" / "a.py").write_text("def a():\n    return 2\n")
    changed = open_snapshot(str(root), tmp_path / "cache").fingerprint
    assert changed != first.fingerprint

    (root / "pkg" / "b.py").write_text("x = 1\n")
    assert folder_fingerprint(root) != changed


def test_folder_fingerprint_ignores_ignored_files(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    before = folder_fingerprint(root)
    (root / "build" / "out.py").write_text("regenerated\n")
    (root / "run.log").write_text("more noise\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert folder_fingerprint(root) == before


def test_fingerprint_depends_on_paths_not_only_contents(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    before = folder_fingerprint(root)
    (root / "pkg" / "a.py").rename(root / "pkg" / "z.py")
    assert folder_fingerprint(root) != before


def test_missing_folder_error_names_the_input(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(SnapshotError) as err:
        open_snapshot(str(missing), tmp_path / "cache")
    message = str(err.value)
    assert str(missing) in message and "does not exist" in message
    assert "\n" not in message


def test_file_is_not_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    with pytest.raises(SnapshotError, match="not a directory"):
        open_snapshot(str(file), tmp_path / "cache")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_unreadable_folder(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    root.chmod(0)
    try:
        with pytest.raises(SnapshotError, match="not readable"):
            open_snapshot(str(root), tmp_path / "cache")
    finally:
        root.chmod(stat.S_IRWXU)


# ----------------------------------------------------------------------------- git


@pytest.fixture
def origin(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "origin")
    repo.commit("first", {"a.py": "v = 1\n", "README.md": "one\n"})
    repo.commit("second", {"a.py": "v = 2\n", "b.py": "w = 1\n"})
    return repo


@needs_git
def test_git_snapshot_at_a_commit(tmp_path: Path, origin: GitRepo) -> None:
    first, second = origin.git("rev-list", "--reverse", "HEAD").split()
    cache = tmp_path / "cache"
    snap = open_snapshot(f"git+{origin.path}@{first}", cache)
    assert snap.kind == "git" and snap.fingerprint == first
    assert snap.root == cache / "git-trees" / first
    assert (snap.root / "a.py").read_text() == "v = 1\n"
    assert not (snap.root / "b.py").exists()

    later = open_snapshot(f"git+file://{origin.path}@{second[:8]}", cache)
    assert later.fingerprint == second  # a short sha resolves to the full one
    assert (later.root / "b.py").exists()
    assert not list((cache / "git-trees").glob(".tmp-*"))


@needs_git
def test_git_snapshot_is_reused_and_fetches_new_commits(tmp_path: Path, origin: GitRepo) -> None:
    first = origin.git("rev-parse", "HEAD~1")
    cache = tmp_path / "cache"
    snap = open_snapshot(f"git+{origin.path}@{first}", cache)
    (snap.root / "marker").write_text("kept")
    again = open_snapshot(f"git+{origin.path}@{first}", cache)
    assert (again.root / "marker").read_text() == "kept"  # reused, not checked out again

    third = origin.commit("third", {"c.py": "x = 3\n"})
    newer = open_snapshot(f"git+{origin.path}@{third}", cache)
    assert (newer.root / "c.py").exists()
    assert len(list((cache / "mirrors").iterdir())) == 1  # one mirror, fetched into


@needs_git
def test_dot_git_url_form(tmp_path: Path, origin: GitRepo) -> None:
    bare = tmp_path / "remote.git"
    origin.git("clone", "-q", "--bare", str(origin.path), str(bare))
    head = origin.git("rev-parse", "HEAD")
    snap = open_snapshot(f"{bare}@{head}", tmp_path / "cache")
    assert snap.kind == "git" and snap.fingerprint == head
    assert (snap.root / "b.py").exists()


@needs_git
def test_git_bad_commit_and_bad_url(tmp_path: Path, origin: GitRepo) -> None:
    with pytest.raises(SnapshotError, match="not found") as err:
        open_snapshot(f"git+{origin.path}@{'0' * 40}", tmp_path / "cache")
    assert "check the commit" in str(err.value)
    with pytest.raises(SnapshotError, match="git clone .* failed"):
        open_snapshot(f"git+{tmp_path / 'missing'}@abc123", tmp_path / "cache")
    with pytest.raises(SnapshotError, match="without a commit"):
        open_snapshot(f"git+{origin.path}", tmp_path / "cache")


def test_git_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SnapshotError, match="git is not installed"):
        open_snapshot("git+https://example.com/x.git@abc", tmp_path / "cache")


# ----------------------------------------------------------------------------- pypi


def _add(tf: tarfile.TarFile, name: str, data: bytes = b"x = 1\n") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


def make_sdist(folder: Path, name: str = "tinypkg", version: str = "0.1", extra=()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{name}-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        top = f"{name}-{version}"
        _add(tf, f"{top}/setup.py", b"from setuptools import setup\nsetup()\n")
        _add(tf, f"{top}/{name}/__init__.py", b"VERSION = '0.1'\n")
        for member in extra:
            if isinstance(member, tarfile.TarInfo):
                tf.addfile(member)
            else:
                _add(tf, member)
    return archive


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_pypi_snapshot_from_offline_dir(tmp_path: Path) -> None:
    archive = make_sdist(tmp_path / "offline")
    digest = sha256(archive)
    cache = tmp_path / "cache"
    snap = open_snapshot(
        "pypi:tinypkg==0.1", cache, expected_sha256=digest, offline_dir=tmp_path / "offline"
    )
    assert snap.kind == "pypi" and snap.fingerprint == digest
    assert snap.root == cache / "sdist-trees" / "tinypkg-0.1" / "tinypkg-0.1"
    assert (snap.root / "tinypkg" / "__init__.py").read_text() == "VERSION = '0.1'\n"
    assert not list((cache / "sdist-trees").glob(".tmp-*"))

    archive.unlink()  # the unpacked tree is reused without the archive
    again = open_snapshot("tinypkg==0.1", cache, offline_dir=tmp_path / "offline")
    assert again.root == snap.root and again.fingerprint == digest


def test_pypi_sha_mismatch_names_both_hashes(tmp_path: Path) -> None:
    archive = make_sdist(tmp_path / "offline")
    wrong = "ab" * 32
    with pytest.raises(SnapshotError) as err:
        open_snapshot(
            "pypi:tinypkg==0.1",
            tmp_path / "cache",
            expected_sha256=wrong,
            offline_dir=tmp_path / "offline",
        )
    message = str(err.value)
    assert wrong in message and sha256(archive) in message and "mismatch" in message
    assert not (tmp_path / "cache" / "sdist-trees" / "tinypkg-0.1").exists()


@pytest.mark.parametrize(
    "member", ["../evil.py", "/abs/evil.py", "tinypkg-0.1/../../evil.py"], ids=str
)
def test_unsafe_member_is_refused(tmp_path: Path, member: str) -> None:
    make_sdist(tmp_path / "offline", extra=[member])
    cache = tmp_path / "cache"
    with pytest.raises(SnapshotError, match="unsafe path"):
        open_snapshot("pypi:tinypkg==0.1", cache, offline_dir=tmp_path / "offline")
    assert not (tmp_path / "evil.py").exists()
    assert not (cache / "sdist-trees").exists() or not list((cache / "sdist-trees").iterdir())


def test_escaping_symlink_is_refused(tmp_path: Path) -> None:
    link = tarfile.TarInfo("tinypkg-0.1/link")
    link.type, link.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
    make_sdist(tmp_path / "offline", extra=[link])
    cache = tmp_path / "cache"
    with pytest.raises(SnapshotError, match="unsafe member"):
        open_snapshot("pypi:tinypkg==0.1", cache, offline_dir=tmp_path / "offline")
    assert not list((cache / "sdist-trees").iterdir())  # no half tree, no temp dir


def test_interrupted_unpack_leaves_no_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_sdist(tmp_path / "offline")
    real = tarfile.TarFile.extractall

    def half_then_fail(self: tarfile.TarFile, path: str, **kwargs: object) -> None:
        real(self, path, members=self.getmembers()[:1], filter="data")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tarfile.TarFile, "extractall", half_then_fail)
    cache = tmp_path / "cache"
    with pytest.raises(SnapshotError, match="cannot unpack .*No space left"):
        open_snapshot("pypi:tinypkg==0.1", cache, offline_dir=tmp_path / "offline")
    assert not list((cache / "sdist-trees").iterdir())
    monkeypatch.undo()
    snap = open_snapshot("pypi:tinypkg==0.1", cache, offline_dir=tmp_path / "offline")
    assert (snap.root / "setup.py").is_file()


def test_stale_tree_is_replaced_when_the_expected_hash_changes(tmp_path: Path) -> None:
    offline = tmp_path / "offline"
    old = sha256(make_sdist(offline))
    cache = tmp_path / "cache"
    assert open_snapshot("tinypkg==0.1", cache, offline_dir=offline).fingerprint == old
    new = sha256(make_sdist(offline, extra=["tinypkg-0.1/added.py"]))
    snap = open_snapshot("tinypkg==0.1", cache, expected_sha256=new, offline_dir=offline)
    assert snap.fingerprint == new and (snap.root / "added.py").is_file()
    assert open_snapshot("tinypkg==0.1", cache).fingerprint == new


def test_zip_sdist_and_canonical_names(tmp_path: Path) -> None:
    offline = tmp_path / "offline"
    offline.mkdir()
    with zipfile.ZipFile(offline / "My_Pkg-2.0.zip", "w") as zf:
        zf.writestr("My_Pkg-2.0/my_pkg/core.py", "def f():\n    pass\n")
    assert find_sdist("my-pkg", "2.0", [offline]) == offline / "My_Pkg-2.0.zip"
    snap = open_snapshot("pypi:my.pkg==2.0", tmp_path / "cache", offline_dir=offline)
    assert (snap.root / "my_pkg" / "core.py").exists()
    assert snap.root.name == "My_Pkg-2.0"


def test_pip_failure_reports_last_stderr_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fakepython"
    fake.write_text(
        "#!/bin/sh\necho 'WARNING: first' >&2\n"
        "echo 'ERROR: No matching distribution found for nopkg==9.9' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(SnapshotError) as err:
        open_snapshot("pypi:nopkg==9.9", tmp_path / "cache")
    message = str(err.value)
    assert "pip download nopkg==9.9 failed" in message
    assert "No matching distribution found for nopkg==9.9" in message
    assert "offline_dir" in message


def test_devset_manifest_sha(tmp_path: Path) -> None:
    manifest = {
        "projects": {
            "flask": {"pypi_name": "flask", "version": "2.3.2", "sha256": "f" * 64},
            "requests": {"pypi_name": "requests", "version": "2.31.0", "sha256": "e" * 64},
        }
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert devset_manifest_sha("Flask", "2.3.2", tmp_path) == "f" * 64
    assert devset_manifest_sha("requests", "2.31.0", tmp_path) == "e" * 64
    assert devset_manifest_sha("requests", "2.30.0", tmp_path) is None
    assert devset_manifest_sha("requests", "2.31.0", tmp_path / "nowhere") is None


def test_devset_manifest_is_found_under_the_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$RBENCH_DATA_ROOT/devsets`` is searched (docs/configuration.md#data-root)."""
    (tmp_path / "devsets").mkdir()
    manifest = {
        "projects": {"flask": {"pypi_name": "flask", "version": "9.9.9", "sha256": "d" * 64}}
    }
    (tmp_path / "devsets" / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.delenv("RBENCH_DEVSETS", raising=False)
    monkeypatch.setenv("RBENCH_DATA_ROOT", str(tmp_path))
    assert devset_manifest_sha("flask", "9.9.9") == "d" * 64
    monkeypatch.delenv("RBENCH_DATA_ROOT")
    assert devset_manifest_sha("flask", "9.9.9") is None


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.integration
@pytest.mark.needs_data_root("devsets/manifest.json")
def test_download_requests_sdist_and_verify_manifest_sha(tmp_path: Path, data_root: Path) -> None:
    expected = devset_manifest_sha("requests", "2.31.0", data_root / "devsets")
    if expected is None:
        pytest.skip("devsets manifest not available")
    if not _pypi_reachable():
        pytest.skip("offline: pypi.org is not reachable")
    snap = open_snapshot("pypi:requests==2.31.0", tmp_path / "cache", expected_sha256=expected)
    assert snap.fingerprint == expected
    assert snap.root.name == "requests-2.31.0"
    assert (snap.root / "requests" / "sessions.py").is_file()

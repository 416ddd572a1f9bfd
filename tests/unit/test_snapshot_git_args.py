"""What reaches git from a user's repository address, and what comes back when git
fails (retrieval_bench/snapshot/mirrors.py, build.py; docs/architecture.md#bad-input-and-failures):
a source never reaches git as an option, and a failed clone or fetch names git's
own reason, not the advice git prints after it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import retrieval_bench.snapshot as snapshot_init
from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import build, open_snapshot
from retrieval_bench.snapshot import mirrors as snapshot_mirrors
from retrieval_bench.snapshot.sources import resolve_repo_commits
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = needs_git


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every command the snapshot code runs through ``run_command``."""
    seen: list[list[str]] = []
    real = build.run_command

    def spy(label: str, cmd: list[str], what: str, todo: str) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return real(label, cmd, what, todo)

    monkeypatch.setattr(snapshot_mirrors, "run_command", spy)
    monkeypatch.setattr(snapshot_init, "run_command", spy)
    return seen


def test_a_failed_clone_names_what_git_said(tmp_path: Path) -> None:
    """``repos: {org/proj: "file:///etc"}`` said ``failed: and the repository exists.``,
    the last line of git's advice, instead of why the clone failed."""
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SnapshotError) as err:
        resolve_repo_commits("org/proj", ["a" * 40], tmp_path / "cache", source=f"file://{plain}")
    assert str(err.value) == (
        f"git clone file://{plain} failed: '{plain}' does not appear to be a git repository "
        "(from 'org/proj'): check the bundle, mirror or URL (repos: in the config)"
    )


def test_a_failed_fetch_names_what_git_said(tmp_path: Path) -> None:
    origin = GitRepo(tmp_path / "origin")
    head = origin.commit("first", {"a.py": "v = 1\n"})
    remote = tmp_path / "remote.git"
    origin.git("clone", "-q", "--bare", str(origin.path), str(remote))
    url, cache = f"file://{remote}", tmp_path / "cache"
    assert resolve_repo_commits("org/proj", [head], cache, source=url) == {head: head}
    shutil.rmtree(remote)
    with pytest.raises(SnapshotError) as err:
        resolve_repo_commits("org/proj", ["f" * 40], cache, source=url)
    assert str(err.value) == (
        f"git fetch {url} failed: '{remote}' does not appear to be a git repository "
        "(from 'org/proj'): check the URL and your network"
    )


def test_only_git_gets_its_first_fatal_line() -> None:
    git = "fatal: 'x' does not appear to be a git repository\nfatal: Could not read\n\nand so on."
    assert build._last_line(git, git=True) == "'x' does not appear to be a git repository"
    assert build._last_line("hint: a\nadvice only\n", git=True) == "advice only"
    pip = "ERROR: Could not find a version\nERROR: No matching distribution found for x==1\n"
    assert build._last_line(pip) == "ERROR: No matching distribution found for x==1"
    assert build._last_line("") == "no error output"


def test_every_source_follows_a_double_dash(tmp_path: Path, commands: list[list[str]]) -> None:
    """``git clone``/``git fetch`` got the source with no ``--`` before it."""
    origin = GitRepo(tmp_path / "origin")
    first = origin.commit("first", {"a.py": "v = 1\n"})
    cache = tmp_path / "cache"
    assert open_snapshot(f"git+{origin.path}@{first}", cache).fingerprint == first
    second = origin.commit("second", {"a.py": "v = 2\n"})
    assert open_snapshot(f"git+{origin.path}@{second}", cache).fingerprint == second  # a fetch
    verbs = [next(v for v in ("clone", "fetch", "checkout") if v in c) for c in commands]
    assert verbs == ["clone", "clone", "checkout", "fetch", "clone", "checkout"]
    mirror = snapshot_mirrors.mirror_path(str(origin.path), cache)
    sources = [c[c.index("--") + 1] for c in commands if "checkout" not in c]
    where = snapshot_mirrors.location(str(origin.path))
    assert sources == [where, str(mirror), where, str(mirror)]


def test_a_source_starting_with_a_dash_is_refused(tmp_path: Path) -> None:
    """``git+--upload-pack=CMD@HEAD`` reached ``git clone`` as an option."""
    marker, cache = tmp_path / "ran", tmp_path / "cache"
    spec = f"git+--upload-pack=touch {marker}@HEAD"
    with pytest.raises(SnapshotError) as err:
        open_snapshot(spec, cache)
    assert str(err.value) == (
        f"repository address '--upload-pack=touch {marker}' starts with '-' (from {spec!r}): "
        "give a URL, a local path or a git bundle (a relative path: ./-name)"
    )
    source = f"--upload-pack=touch {marker} ://x"  # as $RBENCH_REPOS may give it
    with pytest.raises(SnapshotError, match=r"^repository address '--upload-pack=.*' starts"):
        resolve_repo_commits("org/proj", ["a" * 40], cache, source=source)
    assert not marker.exists()

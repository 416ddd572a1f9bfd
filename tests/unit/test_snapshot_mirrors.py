"""The one mirror cache: a ``git+URL@commit`` snapshot and a row's ``repo`` + ``commit``
naming the same source share one mirror, cloned once and fetched once when a commit
is missing (docs/architecture.md#caches)."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from retrieval_bench.errors import SnapshotError
from retrieval_bench.snapshot import mirrors as snapshot_mirrors
from retrieval_bench.snapshot import open_snapshot
from retrieval_bench.snapshot.mirrors import mirror_path, open_mirror
from retrieval_bench.snapshot.sources import open_repo, resolve_repo_commits
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = needs_git


@pytest.fixture
def origin(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "origin")
    repo.commit("first", {"a.py": "v = 1\n"})
    repo.commit("second", {"a.py": "v = 2\n", "b.py": "w = 1\n"})
    return repo


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands the mirror cache runs (``clone``, ``fetch``), in order."""
    calls: list[str] = []
    real = snapshot_mirrors.run_command

    def spy(label: str, cmd: list[str], what: str, todo: str) -> subprocess.CompletedProcess[str]:
        calls.append(cmd[3] if cmd[1] == "--git-dir" else cmd[1])
        return real(label, cmd, what, todo)

    monkeypatch.setattr(snapshot_mirrors, "run_command", spy)
    return calls


def _source(kind: str, origin: GitRepo, tmp_path: Path) -> Path:
    """A local bare repository or git bundle of ``origin``."""
    if kind == "bundle":
        out = tmp_path / "proj.bundle"
        origin.git("bundle", "create", str(out), "--all")
    else:
        out = tmp_path / "proj.git"
        origin.git("clone", "-q", "--bare", str(origin.path), str(out))
    return out


@pytest.mark.parametrize("kind", ["bare", "bundle"])
@pytest.mark.parametrize("snapshot_first", [True, False])
def test_url_snapshot_and_repo_row_share_one_mirror(
    tmp_path: Path, origin: GitRepo, git_calls: list[str], kind: str, snapshot_first: bool
) -> None:
    source = _source(kind, origin, tmp_path)
    first, second = origin.git("rev-list", "--reverse", "HEAD").split()
    cache = tmp_path / "cache"

    def as_snapshot() -> None:
        snap = open_snapshot(f"git+{source}@{second}", cache)
        assert snap.kind == "git" and snap.fingerprint == second
        assert (snap.root / "b.py").read_text() == "w = 1\n"

    def as_row() -> None:
        row = open_repo("org/proj", second, cache, source=str(source), parent=True)
        assert row.kind == "repo" and row.fingerprint == first
        assert (row.root / "a.py").read_text() == "v = 1\n" and not (row.root / "b.py").exists()
        assert resolve_repo_commits("org/proj", [second], cache, source=str(source)) == {
            second: second
        }

    for step in (as_snapshot, as_row) if snapshot_first else (as_row, as_snapshot):
        step()
    assert list((cache / "mirrors").iterdir()) == [mirror_path(str(source), cache)]
    assert not (cache / "git").exists()  # the folder of older versions is not made
    assert git_calls == ["clone"]  # cloned once, nothing missing: no fetch


def test_a_missing_commit_is_fetched_once_for_both(
    tmp_path: Path, origin: GitRepo, git_calls: list[str]
) -> None:
    cache = tmp_path / "cache"
    head = origin.git("rev-parse", "HEAD")
    assert open_repo("org/proj", head, cache, source=str(origin.path)).fingerprint == head
    third = origin.commit("third", {"c.py": "x = 3\n"})
    row = open_repo("org/proj", third, cache, source=str(origin.path))  # a local source too
    assert (row.root / "c.py").exists()
    snap = open_snapshot(f"git+{origin.path}@{third[:10]}", cache)  # fetched by the row
    assert snap.fingerprint == third
    assert git_calls == ["clone", "fetch"]
    assert len(list((cache / "mirrors").iterdir())) == 1


def test_a_commit_not_in_the_source_keeps_its_errors(
    tmp_path: Path, origin: GitRepo, git_calls: list[str]
) -> None:
    cache, missing = tmp_path / "cache", "0123456789" * 4
    with pytest.raises(SnapshotError, match="commit '0123456789.*' not found in") as err:
        open_snapshot(f"git+{origin.path}@{missing}", cache)
    assert "check the commit sha" in str(err.value)
    found = resolve_repo_commits("org/proj", [missing], cache, source=str(origin.path))
    assert "commit 012345678901 is not in" in str(found[missing])
    # one fetch of every ref each time, then the sha itself, which a repository refuses
    assert git_calls == ["clone", "fetch", "fetch", "fetch", "fetch"]


def test_an_unreachable_source_names_the_fetch(tmp_path: Path, origin: GitRepo) -> None:
    """A mirror whose source is gone (offline): a missing commit fails on the fetch."""
    remote = tmp_path / "remote.git"
    origin.git("clone", "-q", "--bare", str(origin.path), str(remote))
    url, cache, head = f"file://{remote}", tmp_path / "cache", origin.git("rev-parse", "HEAD")
    assert resolve_repo_commits("org/proj", [head], cache, source=url) == {head: head}
    shutil.rmtree(remote)
    assert open_snapshot(f"git+{url}@{head}", cache).fingerprint == head  # no fetch needed
    with pytest.raises(SnapshotError, match=r"git fetch file://.* failed") as err:
        resolve_repo_commits("org/proj", ["f" * 40], cache, source=url)
    assert str(err.value).endswith("(from 'org/proj'): check the URL and your network")
    with pytest.raises(SnapshotError, match=r"git fetch file://.* failed") as err:
        open_snapshot(f"git+{url}@{'f' * 40}", cache)
    assert str(err.value).endswith("check the URL, your network and credentials")


def test_concurrent_openers_clone_once(
    tmp_path: Path, origin: GitRepo, git_calls: list[str]
) -> None:
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(4) as pool:
        mirrors = set(
            pool.map(
                lambda _: open_mirror(str(origin.path), cache, label="x", todo="retry"), range(4)
            )
        )
    assert mirrors == {mirror_path(str(origin.path), cache)}
    assert git_calls == ["clone"]
    assert [p.name for p in (cache / "mirrors").iterdir()] == [next(iter(mirrors)).name]

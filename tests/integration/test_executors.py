"""Per-question snapshots on the three executors — this process, a local process
pool and a real local Ray cluster — give identical TREC files; an interrupted
run resumes without redoing finished snapshots; a Ray address that does not
answer is one line (docs/architecture.md#executors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import main
from retrieval_bench.config import load_config
from retrieval_bench.harness.run import groups
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = needs_git

MISSING = "0123456789abcdef0123456789abcdef01234567"
STAGES = ("bm25", "exact", "rrf")


def _history(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A bundle of a 6-commit repository and questions asked at 5 of its commits
    (two at one commit) plus one at a commit the bundle lacks."""
    repo = GitRepo(tmp_path / "proj")
    files = {
        "core/config.py": "def load_config(path):\n    return open(path).read()\n",
        "core/cache.py": "class LruCache:\n    def get(self, key):\n        return None\n",
        "cli/main.py": "import argparse\n\ndef main():\n    parse_args()\n",
        "docs/notes.md": "# notes\nThe cache keeps entries.\n",
    }
    rows: list[dict[str, Any]] = []
    sha = repo.commit("start", files)
    changes = [
        ("core/retry.py", "def retry_request(fn, times):\n    return fn()\n", "retry a request"),
        ("core/cache.py", "class LruCache:\n    def evict_oldest(self):\n        pass\n",
         "evict the oldest cache entry"),
        ("net/socket_pool.py", "class SocketPool:\n    def borrow(self):\n        pass\n",
         "borrow a socket from the pool"),
        ("core/config.py", "def load_config(path, strict=False):\n    return path\n",
         "load config in strict mode"),
        ("cli/main.py", "def main(argv=None):\n    return parse_args(argv)\n",
         "main entry point argv"),
    ]  # fmt: skip
    for i, (path, text, question) in enumerate(changes):
        sha = repo.commit(f"change {i}", {path: text})
        rows.append({"id": f"q{i}", "query": question, "gold_files": [path], "commit": sha})
    rows.append({"id": "q-same", "query": "load_config path", "gold_files": ["core/config.py"],
                 "commit": sha})  # fmt: skip
    rows.append({"id": "q-missing", "query": "anything", "gold_files": ["a.py"],
                 "commit": MISSING})  # fmt: skip
    bundle = tmp_path / "proj.bundle"
    repo.git("bundle", "create", str(bundle), "--all")
    return bundle, rows


def _config(tmp_path: Path, executor: dict[str, Any] | None = None) -> Path:
    bundle, rows = _history(tmp_path)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg: dict[str, Any] = {
        "name": "history",
        "datasets": [{"name": "proj", "questions": str(questions), "repo": "org/proj"}],
        "repos": {"org/proj": str(bundle)},
        "chunker": {"name": "ast", "budget": 128},
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf"}],
        "candidates": 20,
    }
    if executor:
        cfg["executor"] = executor
    path = tmp_path / "history.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(
    config: Path, home: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    code = main(["--workspace", str(home), "run", str(config), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {**json.loads(out), "stderr": err}


def _trec(home: Path, run_id: str) -> dict[str, str]:
    folder = Workspace(home).results_dir / run_id / "runs" / "proj"
    return {s: (folder / f"{s}.trec").read_text() for s in STAGES}


def _scores(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The ``all`` table without the timing columns."""
    table = result["tables"]["all"]
    return {s: {m: v for m, v in row.items() if m != "seconds"} for s, row in table.items()}


def _provenance(home: Path, run_id: str) -> dict[str, Any]:
    return ResultsDB(Workspace(home).db_path).get_run(run_id).provenance


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("RBENCH_HOME", raising=False)
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))  # cold, shared by the runs
    return _config(tmp_path)


def test_serial_processes_and_ray_give_identical_results(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serial = _run(history, tmp_path / "serial", capsys)
    pool = _run(history, tmp_path / "pool", capsys, "--jobs", "2")
    ray = _run(history, tmp_path / "ray", capsys, "--executor", "ray", "--jobs", "2")
    expected = _trec(tmp_path / "serial", serial["run_id"])
    assert all(expected[s].strip() for s in STAGES)  # every stage ranked something
    assert _trec(tmp_path / "pool", pool["run_id"]) == expected
    assert _trec(tmp_path / "ray", ray["run_id"]) == expected
    assert _scores(pool) == _scores(serial) == _scores(ray)
    # five snapshots ran (q4 and q-same share one); the missing commit was one line
    for name, res in (("serial", serial), ("pool", pool), ("ray", ray)):
        prov = _provenance(tmp_path / name, res["run_id"])
        groups_ = prov["datasets"]["proj"]["snapshot_groups"]
        assert len(groups_) == 5
        assert sorted(sorted(g["query_ids"]) for g in groups_) == [
            ["q-same", "q4"],
            ["q0"],
            ["q1"],
            ["q2"],
            ["q3"],
        ]
        (failure,) = prov["datasets"]["proj"]["snapshot_failures"]
        assert failure["query_ids"] == ["q-missing"] and MISSING[:12] in failure["reason"]
        assert res["stderr"].count("snapshot org/proj@0123456789ab") == 1
    workers = {g["worker"] for g in _provenance(tmp_path / "pool", pool["run_id"])["datasets"][
        "proj"]["snapshot_groups"]}  # fmt: skip
    assert len(workers) >= 1 and all(":" in w for w in workers)
    assert _provenance(tmp_path / "pool", pool["run_id"])["executor"]["name"] == "processes"
    ray_exec = _provenance(tmp_path / "ray", ray["run_id"])["executor"]
    assert ray_exec["name"] == "ray" and ray_exec["workers"] == 2 and ray_exec["startup_s"] > 0


def test_an_interrupted_run_resumes_without_redoing_finished_snapshots(
    history: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clean = _run(history, tmp_path / "clean", capsys)
    home = tmp_path / "home"
    ran: list[str] = []
    real = groups.run_group

    def interrupted_at_third(task: Any, **kw: Any) -> Any:
        if len(ran) == 2:
            raise KeyboardInterrupt
        ran.append(task.label)
        return real(task, **kw)

    monkeypatch.setattr(groups, "run_group", interrupted_at_third)
    code = main(["--workspace", str(home), "run", str(history), "--json"])
    assert code == 130 and "interrupted" in capsys.readouterr().err
    db = ResultsDB(Workspace(home).db_path)
    (stopped,) = db.list_runs()
    assert stopped.status == "interrupted"
    assert len(list((Workspace(home).results_dir / stopped.id / "groups").glob("*.pkl"))) == 2

    finished = list(ran)
    ran.clear()
    monkeypatch.setattr(groups, "run_group", lambda task, **kw: (ran.append(task.label),
                                                                 real(task, **kw))[1])  # fmt: skip
    resumed = _run(history, home, capsys, "--resume")
    assert resumed["run_id"] == stopped.id
    assert len(ran) == 3 and not set(ran) & set(finished)  # only the 3 unfinished snapshots
    assert "resumed 2 finished snapshot(s)" in resumed["stderr"]
    assert _trec(home, stopped.id) == _trec(tmp_path / "clean", clean["run_id"])
    assert _scores(resumed) == _scores(clean)
    assert db.get_run(stopped.id).status == "done"
    assert not (Workspace(home).results_dir / stopped.id / "groups").exists()
    # a finished run is not resumable, and a changed config is refused with the key
    code = main(["--workspace", str(home), "run", str(history), "--resume", stopped.id])
    assert code == 2 and "nothing to resume" in capsys.readouterr().err


def test_resume_refuses_another_config(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    db = ResultsDB(Workspace(home).db_path)
    cfg = load_config(history).model_dump(mode="json")
    run_id = db.start_run("history", config={**cfg, "candidates": 5})
    db.finish_run(run_id, "interrupted")
    code = main(["--workspace", str(home), "run", str(history), "--resume", run_id])
    err = capsys.readouterr().err
    assert code == 2 and "differs in: candidates" in err and len(err.strip().splitlines()) == 1
    code = main(["--workspace", str(home), "run", str(history), "--resume"])
    err = capsys.readouterr().err
    assert code == 2 and "no interrupted or failed run of config 'history'" in err


def test_a_ray_address_that_does_not_answer_is_one_line_and_stores_nothing(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    code = main(["--workspace", str(home), "run", str(history), "--ray-address", "127.0.0.1:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert [line for line in err if "error" in line] == [
        "rbench: error: Ray address 127.0.0.1:1 does not answer (Connection refused): start "
        "the cluster (ray start --head) or fix executor.address; leave it out to start a local one"
    ]
    assert ResultsDB(Workspace(home).db_path).list_runs() == []

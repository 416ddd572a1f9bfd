"""``rbench run`` with ``history`` stages (docs/stages.md#history): a five-commit
repository built here, questions at a commit's parent from ``repos:`` + ``commit``,
the TREC files checked against the scores computed by hand
(tests/unit/retrieval/history_repo.py); a folder snapshot fails the stage for its
questions with one line while the run goes on."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.trec import read_run
from retrieval_bench.workspace import Workspace
from tests.unit.datasets.gitrepo import needs_git
from tests.unit.retrieval.history_repo import SIM, history_repo

pytestmark = [needs_git, pytest.mark.integration]


def test_rbench_run_writes_the_history_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, shas = history_repo(tmp_path / "proj")
    rows = [  # asked at c5's parent, c4: c5 itself is the future
        {"id": "q1", "query": "parser crash", "gold_files": ["src/b.py"], "commit": shas[4]},
        {"id": "q2", "query": "crash in src/a.py", "gold_files": ["src/b.py"], "commit": shas[4]},
    ]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    folder = tmp_path / "plain"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "a.py").write_text("def parse():\n    return 1\n")
    (tmp_path / "f.jsonl").write_text(
        json.dumps({"id": "f1", "query": "parse", "gold_files": ["src/a.py"]}) + "\n"
    )
    cfg = {
        "name": "hist",
        "datasets": [
            {"name": "proj", "questions": "q.jsonl", "repo": "org/proj", "commit_is": "parent"},
            {"name": "plain", "questions": "f.jsonl", "snapshot": str(folder)},
        ],
        "repos": {"org/proj": str(repo.path)},
        "retrievers": [
            {"name": "history", "half_life": 2},
            {"name": "history", "id": "churn", "signal": "churn", "window": None},
            {"name": "history", "id": "co-change", "signal": "co-change", "max_files": None},
            {"name": "bm25"},
        ],
        "table_k": 5,
    }
    (tmp_path / "h.json").write_text(json.dumps(cfg))
    home = tmp_path / "home"
    code = main(["--workspace", str(home), "run", str(tmp_path / "h.json"), "--json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    result = json.loads(out)
    runs = Workspace(home).results_dir / result["run_id"] / "runs"

    similar = read_run(runs / "proj" / "history.trec").scores
    assert list(similar["q1"]) == ["file:src/a.py", "file:src/b.py"]
    assert similar["q1"]["file:src/a.py"] == pytest.approx(SIM * 7 / 6, rel=1e-12)
    assert similar["q1"]["file:src/b.py"] == pytest.approx(SIM / 6, rel=1e-12)
    lines = (runs / "proj" / "history.trec").read_text().splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "file:src/a.py", "1"]
    assert lines[0].split()[5] == "history"
    churn = read_run(runs / "proj" / "churn.trec").scores
    assert (
        churn["q1"]
        == churn["q2"]
        == {
            "file:src/a.py": pytest.approx(math.log(4)),
            "file:src/b.py": pytest.approx(math.log(3)),
            "file:src/helpers.py": pytest.approx(math.log(3)),
        }
    )
    co_change = read_run(runs / "proj" / "co-change.trec").scores
    assert co_change["q2"] == {
        "file:src/b.py": pytest.approx(2 / 3),
        "file:src/helpers.py": pytest.approx(1 / 3),
    }
    assert result["tables"]["all"]["history"]["R@5"] == pytest.approx(2 / 3)  # q1, f1 failed

    # the folder's question: the history stages failed with the reason, bm25 ran
    failed = {(s, q): why for s, q, why in ResultsDB(Workspace(home).db_path).failures(
        result["run_id"])}  # fmt: skip
    assert set(failed) == {("history", "f1"), ("churn", "f1"), ("co-change", "f1")}
    why = failed[("history", "f1")]
    assert "is a folder, not a git commit" in why and "\n" not in why
    assert read_run(runs / "plain" / "bm25.trec").scores["f1"]

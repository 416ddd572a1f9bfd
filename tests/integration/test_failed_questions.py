"""Questions whose snapshot failed stay in the denominator: each counts as a miss
(0 in every metric) and every table says so — ``rbench run`` (text and JSON),
``rbench show``, ``run.json`` and the web run page
(docs/metrics.md#questions-that-could-not-be-run); ``(1 query`` in the singular;
``rbench show -k 3`` redoes the paired column at k=3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = [needs_git, pytest.mark.integration]

MISSING = "0123456789abcdef0123456789abcdef01234567"


def _config(tmp_path: Path) -> Path:
    """Three questions: two at commits of a bundled repository (bm25 finds both gold
    files in its top 5), one at a commit the bundle lacks."""
    repo = GitRepo(tmp_path / "proj")
    first = repo.commit("start", {
        "core/retry.py": "def retry_request(fn, times):\n    return fn()\n",
        "core/cache.py": "class LruCache:\n    def get(self, key):\n        return None\n",
    })  # fmt: skip
    second = repo.commit("pool", {
        "net/socket_pool.py": "class SocketPool:\n    def borrow_socket(self):\n        pass\n",
    })  # fmt: skip
    rows = [
        {"id": "q-retry", "query": "retry_request times", "gold_files": ["core/retry.py"],
         "commit": first},
        {"id": "q-pool", "query": "borrow_socket SocketPool", "gold_files": ["net/socket_pool.py"],
         "commit": second},
        {"id": "q-missing", "query": "anything", "gold_files": ["a.py"], "commit": MISSING},
    ]  # fmt: skip
    bundle = tmp_path / "proj.bundle"
    repo.git("bundle", "create", str(bundle), "--all")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {
        "name": "history",
        "datasets": [{"name": "proj", "questions": str(questions), "repo": "org/proj"}],
        "repos": {"org/proj": str(bundle)},
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }
    path = tmp_path / "history.json"
    path.write_text(json.dumps(cfg))
    return path


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return out, err


@pytest.fixture
def ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    home = tmp_path / "home"
    out, _ = _main(capsys, "--workspace", str(home), "run", str(_config(tmp_path)), "--json")
    return {**json.loads(out), "home": home}


def test_a_question_that_could_not_be_run_counts_as_a_miss(ran: dict[str, Any]) -> None:
    assert ran["counts"]["all"] == 3
    (reason,) = ran["failed_questions"]["all"].values()
    assert list(ran["failed_questions"]["all"]) == ["q-missing"]
    assert f"commit {MISSING[:12]} is not in" in reason
    bm25 = ran["tables"]["all"]["bm25"]
    assert bm25["Acc@5"] == pytest.approx(2 / 3) and bm25["R@5"] == pytest.approx(2 / 3)
    assert bm25["MRR"] <= 2 / 3
    # stored per query: 0 in every metric, nothing lost; no stage failed on it
    db = ResultsDB(Workspace(ran["home"]).db_path)
    for stage in ("bm25", "exact", "rrf"):
        row = db.query_metrics(ran["run_id"], stage)["q-missing"]
        assert row and all(v == 0.0 for v in row.values())
    # a pair (0 against 0) in the paired columns: Δ is the difference of the column means
    table = ran["tables"]["all"]
    for stage in ("exact", "rrf"):
        test = ran["paired"]["all"]["tests"][stage]
        assert (test["n"], test["queries"]) == (3, 3)
        assert test["delta"] == pytest.approx(table[stage]["R@5"] - table["bm25"]["R@5"])
    # run.json and the provenance keep which question failed and why
    run_dir = Workspace(ran["home"]).results_dir / ran["run_id"]
    prov = json.loads((run_dir / "run.json").read_text())["run"]["provenance"]
    assert prov["question_counts"]["all"] == {"total": 3, "failed": {"q-missing": reason}}
    assert prov["datasets"]["proj"]["failed_questions"] == {"q-missing": reason}
    assert prov["datasets"]["proj"]["n_examples"] == 3
    drill = {json.loads(x)["query_id"]: json.loads(x) for x in (run_dir / "queries.jsonl").open()}
    assert drill["q-missing"]["not_run"] == reason


def test_every_table_says_which_questions_failed(
    ran: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, run_id = str(ran["home"]), ran["run_id"]
    out, _ = _main(capsys, "--workspace", home, "show", run_id)
    (note,) = [line for line in out.splitlines() if "questions failed" in line]
    assert note.startswith("1 of 3 questions failed: repository org/proj: commit 0123456789ab")
    assert note.endswith("(q-missing); scored 0 (a miss) in every metric")
    shown = json.loads(_main(capsys, "--workspace", home, "show", run_id, "--json")[0])
    assert shown["questions"] == 3 and list(shown["failed_questions"]) == ["q-missing"]
    # the run's own text table says it too, with the same line
    again, _ = _main(capsys, "--workspace", home, "run", str(tmp_path / "history.json"))
    assert "history [all] (3 queries, file level, k=5)" in again
    assert note in again.splitlines()
    # and the web run page, near its table
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from retrieval_bench.web.app import create_app
    from tests.unit.web.conftest import web_client

    client = web_client(create_app(Workspace(ran["home"])))
    page = client.get(f"/runs/{run_id}").text
    assert "<p class='warn' id='failed-questions'>1 of 3 questions failed: " in page
    # the funnel counts it too (recall 0, never lost): its context step is the tables' R@5
    assert "3 gold files over 3 queries; 1 of the queries not run" in page
    assert "mean per query 0.667 · pooled 2/3 = 0.667 · lost here 0" in page
    drill = client.get(f"/runs/{run_id}/queries/q-missing").text
    assert "not run: repository org/proj" in drill and "counts as a miss" in drill


def test_show_markdown_report_and_subsets_say_which_questions_failed(
    ran: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A markdown report (``--out`` or stdout) carries the failed line below its table,
    as ``rbench run --format markdown`` does; ``--subset dataset=NAME`` of a one-dataset
    run is its table (not an empty one); a subset the run lacks is exit 2, as compare."""
    home, run_id = str(ran["home"]), ran["run_id"]
    report = tmp_path / "report.md"
    _main(capsys, "--workspace", home, "show", run_id, "--format", "markdown", "--out",
          str(report))  # fmt: skip
    assert "\n1 of 3 questions failed: repository org/proj" in report.read_text()
    out, _ = _main(capsys, "--workspace", home, "show", run_id, "--format", "markdown")
    assert "\n1 of 3 questions failed: " in out
    out, _ = _main(capsys, "--workspace", home, "show", run_id, "--subset", "dataset=proj")
    assert "history [dataset=proj]" in out and "\nbm25 " in out and "1 of 3 questions failed" in out
    shown = json.loads(_main(capsys, "--workspace", home, "show", run_id, "--subset",
                             "dataset=proj", "--json")[0])  # fmt: skip
    assert set(shown["table"]) == {"bm25", "exact", "rrf"} and shown["questions"] == 3
    assert main(["--workspace", home, "show", run_id, "--subset", "dataset=nope"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.strip() == (
        f"rbench: error: run {run_id} has no subset 'dataset=nope'; its subsets: all"
    )


def test_one_question_is_one_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(tmp_path / "home")
    out, _ = _main(capsys, "--workspace", home, "run", str(_config(tmp_path)), "--limit", "1")
    assert "history [all] (1 query, file level, k=5)" in out


def test_show_k_redoes_the_paired_column_at_that_k(
    ran: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, run_id = str(ran["home"]), ran["run_id"]
    out, _ = _main(capsys, "--workspace", home, "show", run_id, "-k", "3", "--format", "csv")
    header, *rows = [line.split(",") for line in out.splitlines()]
    assert "ΔR@3 vs bm25" in header and not any("R@5" in h for h in header)
    # the same numbers as a run made at k=3
    at3, _ = _main(capsys, "--workspace", home, "run", str(tmp_path / "history.json"), "-k", "3",
                   "--format", "csv")  # fmt: skip
    head3, *rows3 = [line.split(",") for line in at3.splitlines()]
    cols = [header.index("ΔR@3 vs bm25"), header.index("p"), header.index("pairs")]
    cols3 = [head3.index("ΔR@3 vs bm25"), head3.index("p"), head3.index("pairs")]
    shown = {r[0]: [r[i] for i in cols] for r in rows}
    made = {r[1]: [r[i] for i in cols3] for r in rows3}  # run's CSV leads with the subset
    assert shown == made


def test_show_baseline_and_metric_redo_the_paired_columns(
    ran: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--baseline exact --metric MRR`` gives the columns of a run whose config asks for
    them; an unknown stage or metric is a clear error."""
    home, run_id = str(ran["home"]), ran["run_id"]
    argv = ("--workspace", home, "show", run_id, "--baseline", "exact", "--metric", "MRR")
    out, _ = _main(capsys, *argv, "--format", "csv")
    header, *rows = [line.split(",") for line in out.splitlines()]
    cfg = json.loads((tmp_path / "history.json").read_text())
    cfg["baseline"] = {"stage": "exact", "metric": "MRR"}
    (tmp_path / "exact-mrr.json").write_text(json.dumps(cfg))
    made_out, _ = _main(capsys, "--workspace", home, "run", str(tmp_path / "exact-mrr.json"),
                        "--format", "csv")  # fmt: skip
    made_header, *made_rows = [line.split(",") for line in made_out.splitlines()]
    cols = [header.index("ΔMRR vs exact"), header.index("p"), header.index("pairs")]
    made_cols = [made_header.index(h) for h in ("ΔMRR vs exact", "p", "pairs")]
    shown = {r[0]: [r[i] for i in cols] for r in rows}
    made = {r[1]: [r[i] for i in made_cols] for r in made_rows}
    assert shown == made and shown["exact"][0] == ""  # the baseline's own row
    for bad, needle in (("--baseline", "'nope' is not a stage"), ("--metric", "no such")):
        code = main(["--workspace", home, "show", run_id, bad, "nope"])
        assert code == EXIT_BAD_INPUT and needle in capsys.readouterr().err

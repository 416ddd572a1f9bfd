"""``rebuild_db``: a damaged results database moved aside, runs reloaded from results/,
the prompt lab's readable tables copied over."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.prompt_eval.records import Row
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.store.db import CorruptDBError, ResultsDB
from retrieval_bench.store.rebuild import rebuild_db
from retrieval_bench.store.runfile import export_run, save_run_file
from retrieval_bench.workspace import Workspace


def _damage_table(path: Path, table: str) -> None:
    """Overwrite the root page of one table, leaving every other page intact."""
    con = sqlite3.connect(path)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with path.open("r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\xff" * size)


def test_rebuild_restores_runs_and_keeps_prompt_lab_rows(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    with ResultsDB(ws.db_path) as db:
        rid = db.start_run("kept", {"table_k": 5})
        db.record_stage(rid, "bm25", {"all": {"R@5": 0.5, "MRR": float("nan")}}, seconds=1.0)
        db.record_query_metrics(rid, "bm25", {"q1": {"R@5": 0.5}})
        db.finish_run(rid, "done", {"total": 2.0})
        save_run_file(db, rid, ws.results_dir / rid)  # per-query rows embedded: no jsonl here
        before = export_run(db, rid)
    with PromptStore(ws.db_path) as prompts, prompts.transaction() as c:
        prompts.write_row(c, "uc", Row("r1", {"x": "1"}, {"y": 2}), None)
    _damage_table(ws.db_path, "runs")
    with (
        pytest.raises(CorruptDBError, match="rbench runs --rebuild-db"),
        ResultsDB(ws.db_path) as db,
    ):
        db.list_runs()

    report = rebuild_db(ws)
    assert report.moved_to is not None and report.moved_to.is_file()
    assert report.restored == [(rid, "done", "kept")] and not report.unreadable
    assert "pe_rows" in report.salvaged
    with ResultsDB(ws.db_path) as db:
        assert export_run(db, rid) == before
    with PromptStore(ws.db_path) as prompts:
        assert [r.id for r in prompts.rows("uc")] == ["r1"]


def test_unreadable_run_folders_are_reported_not_fatal(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    bad = ws.results_dir / "20240101-000000-aaaaaa"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{not json")
    (ws.results_dir / "notes").mkdir()  # not a run folder: ignored
    report = rebuild_db(ws)
    assert report.restored == [] and report.moved_to is None
    assert [folder for folder, _ in report.unreadable] == [str(bad)]


def test_rebuild_restores_an_eval_run(tmp_path: Path) -> None:
    """``rbench eval`` runs keep their per-sample metrics in run.json (no query_metrics.jsonl)."""
    from retrieval_bench.harness.eval_predictions import evaluate_predictions

    ws = Workspace(tmp_path / "home")
    answers = Path(__file__).resolve().parents[3] / "benchmarks/eval/fixtures_answers.jsonl"
    run_id = evaluate_predictions(answers, ws, metrics=["token_f1", "exact_match"]).run_id
    assert run_id is not None
    with ResultsDB(ws.db_path) as db:
        before = export_run(db, run_id)
    ws.db_path.unlink()
    assert rebuild_db(ws).restored == [(run_id, "done", "fixtures_answers.jsonl")]
    with ResultsDB(ws.db_path) as db:
        assert export_run(db, run_id) == before
        assert len(db.query_metrics(run_id, "answer")) == len(before["query_metrics"]["answer"])

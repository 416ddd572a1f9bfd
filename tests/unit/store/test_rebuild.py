"""``rebuild_db``: a damaged results database moved aside, runs and sweeps reloaded
from results/, the prompt lab's readable tables and sweeps older than sweep.json
copied over, and the report saying what was and was not restored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.store.db import CorruptDBError, ResultsDB
from retrieval_bench.store.rebuild import rebuild_db
from retrieval_bench.store.runfile import export_run, save_run_file
from retrieval_bench.store.sweepfile import save_sweep_file
from retrieval_bench.store.sweeps import finish_sweep, get_sweep, record_cell, start_sweep
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
    assert report.salvage is not None and report.salvage.kept[0].rows["pe_rows"] == 1
    assert report.complete
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
    from retrieval_bench.harness.eval.predictions import evaluate_predictions

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


def _sweep(db: ResultsDB, run_id: str | None) -> str:
    sid = start_sweep(db, "grid", {"name": "grid"}, {"grid": {"a": [1, 2]}})
    record_cell(db, sid, 0, "select:dev", "a=1", {"a": 1}, run_id, "done", {"mean": 0.5})
    record_cell(db, sid, 1, "select:dev", "a=2", {"a": 2}, None, "failed", {}, "boom")
    finish_sweep(db, sid, "done", {"chosen": 0})
    return sid


def test_sweeps_come_back_from_sweep_json_or_the_damaged_file(tmp_path: Path) -> None:
    """A sweep with a sweep.json is loaded from it (the database may be gone); one
    older than sweep.json is copied from the damaged file, its cells with it (a run
    the new database lacks dropped from its cell)."""
    ws = Workspace(tmp_path / "home")
    with ResultsDB(ws.db_path) as db:
        rid = db.start_run("cell", {})
        db.finish_run(rid, "done", {})
        save_run_file(db, rid, ws.results_dir / rid)
        on_disk = _sweep(db, rid)
        save_sweep_file(db, on_disk, ws.results_dir / "sweeps" / on_disk)
        gone = db.start_run("cell whose folder is gone", {})  # no run.json: not restored
        older = _sweep(db, gone)
        before = {s: get_sweep(db, s) for s in (on_disk, older)}
    _damage_table(ws.db_path, "runs")
    report = rebuild_db(ws)
    assert [s[0] for s in report.sweeps] == [on_disk]
    assert report.salvage is not None and report.salvage.sweeps == [older]
    assert report.complete
    with ResultsDB(ws.db_path) as db:
        assert get_sweep(db, on_disk) == before[on_disk]
        restored = get_sweep(db, older)
    assert restored.cells[0].run_id is None and restored.cells[1].error == "boom"
    assert restored.summary == before[older].summary
    assert any(line.startswith("kept 1 sweep(s) from the old database") for line in report.lines())

    ws.db_path.unlink()  # no database at all: the sweep with a sweep.json still comes back
    report = rebuild_db(ws)
    assert [s[0] for s in report.sweeps] == [on_disk] and report.salvage is None


def test_a_damaged_prompt_table_keeps_the_rest_and_says_so(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    ResultsDB(ws.db_path).close()
    with PromptStore(ws.db_path) as prompts, prompts.transaction() as c:
        prompts.write_row(c, "uc", Row("r1", {"x": "1"}, {"y": 2}), None)
        prompts.write_prompt(c, "uc", Prompt("p", "Answer {x}"), None)
    _damage_table(ws.db_path, "runs")
    _damage_table(ws.db_path, "pe_prompts")
    report = rebuild_db(ws)
    assert report.salvage is not None and not report.complete
    (kept,) = report.salvage.kept
    assert kept.rows["pe_rows"] == 1 and list(kept.partial) == ["pe_prompts"]
    lines = report.lines()
    assert "kept the prompt tables from the old database: pe_rows 1 row(s)" in lines
    assert any(
        line.startswith("  could not read all of pe_prompts in the damaged file (the rest lost)")
        for line in lines
    )
    with PromptStore(ws.db_path) as prompts:  # at the schema version its rows have
        assert [r.id for r in prompts.rows("uc")] == ["r1"] and prompts.prompts("uc") == []
        with prompts.transaction() as c:  # a new prompt writes where the store expects
            prompts.write_prompt(c, "uc", Prompt("p2", "Answer {x}"), None)
        assert [p.name for p in prompts.prompts("uc")] == ["p2"]

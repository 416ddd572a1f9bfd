"""A benchmark run's life in the store: every way out marks it (done, failed with the
reason, interrupted), ``rbench runs --delete/--prune``, and ``--rebuild-db`` bringing
back the same tables from ``results/`` after the database file is damaged."""

from __future__ import annotations

import gc
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run import runner, snapshot_work
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.runfile import RUN_FILE
from retrieval_bench.workspace import Workspace
from tests.unit.harness.test_answers import ANSWERER, QUESTIONS, REPO, FakeClient, config, script


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    """A tiny repo + questions (bm25 and rrf only: no model to load)."""
    root = tmp_path / "repo"
    for path, text in REPO.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return tmp_path


@pytest.fixture
def fake_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("retrieval_bench.llm.factory.make_llm", lambda *_a: FakeClient(script))


def _ws(bench: Path) -> Workspace:
    return Workspace(bench / "home")


def _only_run(bench: Path) -> Any:
    with ResultsDB(_ws(bench).db_path) as db:
        (run,) = db.list_runs()
    return run


def _run_file(bench: Path, run_id: str) -> dict[str, Any]:
    return dict(json.loads((_ws(bench).results_dir / run_id / RUN_FILE).read_text()))


def test_a_failure_after_the_run_started_marks_it_failed_with_the_reason(
    bench: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LLM provider was set up outside the runner's try block: its ConfigError
    (e.g. an unknown stage name) left the run ``running`` for ever."""

    def unknown(*_args: Any) -> None:
        raise ConfigError("retriever 'nope' is not registered")

    monkeypatch.setattr(runner, "make_llm_provider", unknown)
    with pytest.raises(ConfigError):
        run_benchmark(config(bench), _ws(bench))
    run = _only_run(bench)
    assert (run.status, run.error) == ("failed", "retriever 'nope' is not registered")
    saved = _run_file(bench, run.id)["run"]
    assert (saved["status"], saved["error"]) == ("failed", "retriever 'nope' is not registered")


def test_an_exception_in_a_stage_is_the_reason(
    bench: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*_args: Any, **_kw: Any) -> None:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(snapshot_work, "run_graph", boom)
    with pytest.raises(RuntimeError):
        run_benchmark(config(bench), _ws(bench))
    run = _only_run(bench)
    assert (run.status, run.error) == ("failed", "RuntimeError: index exploded")
    assert main(["--workspace", str(_ws(bench).root), "runs"]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{run.id}  failed ") and line.endswith(
        "tiny  (RuntimeError: index exploded)"
    )
    assert main(["--workspace", str(_ws(bench).root), "show", run.id]) == EXIT_OK
    assert "\nfailed: RuntimeError: index exploded\n" in capsys.readouterr().out


def test_ctrl_c_marks_the_run_interrupted(bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(*_args: Any, **_kw: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(snapshot_work, "run_graph", stop)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(config(bench), _ws(bench))
    run = _only_run(bench)
    assert (run.status, run.error) == ("interrupted", "interrupted (Ctrl-C)")


def _export(db: ResultsDB, run_id: str) -> dict[str, Any]:
    """Everything the database answers about a run (NaN made comparable)."""

    def clean(table: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
        return {
            k: {m: None if math.isnan(v) else v for m, v in row.items()} for k, row in table.items()
        }

    run = db.get_run(run_id)
    stages = [s.stage for s in db.stages(run_id)]
    return {
        "run": (run.name, run.status, run.created_at, run.finished_at, run.timings, run.error),
        "config": run.config,
        "provenance": run.provenance,
        "stages": db.stages(run_id),
        "subsets": db.subsets(run_id),
        "tables": {s: clean(db.stage_table(run_id, s)) for s in db.subsets(run_id)},
        "per_query": {s: clean(db.query_metrics(run_id, s)) for s in stages},
        "failures": db.failures(run_id),
    }


def test_rebuild_db_restores_every_run_from_results(
    bench: Path, fake_llm: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _ws(bench)
    home = ["--workspace", str(ws.root)]
    done = run_benchmark(config(bench, answerer=ANSWERER, answer_metrics=["token_f1"]), ws)
    plain = run_benchmark(config(bench), ws)
    with ResultsDB(ws.db_path) as db:
        failed = db.start_run("failed one")
        db.finish_run(failed, "failed", {"total": 1.0}, error="RuntimeError: boom")
        before = {rid: _export(db, rid) for rid in (done.run_id, plain.run_id)}
    from retrieval_bench.store.runfile import save_run_file

    with ResultsDB(ws.db_path) as db:
        save_run_file(db, failed, ws.results_dir / failed)
    assert main([*home, "show", done.run_id]) == EXIT_OK
    shown = capsys.readouterr().out
    assert main([*home, "runs"]) == EXIT_OK
    listed = capsys.readouterr().out

    # damage the database: every command names the file and the way out
    gc.collect()  # the runs' connections: the file must be the whole database
    with ws.db_path.open("r+b") as fh:
        fh.truncate(4096)  # the schema page survives, the tables' pages do not
    bench_file = bench / "bench.json"
    bench_file.write_text(json.dumps(config(bench).model_dump(mode="json")))
    commands = (
        ["runs"],
        ["show", done.run_id],
        ["compare", done.run_id, plain.run_id],
        ["run", str(bench_file)],  # before any work
    )
    for argv in commands:
        assert main([*home, *argv]) == EXIT_BAD_INPUT, argv
        assert capsys.readouterr().err == (
            f"rbench: error: results database {ws.db_path} is corrupt (database disk image is "
            "malformed); run `rbench runs --rebuild-db` to move it aside and rebuild it from "
            "results/\n"
        )

    assert main([*home, "runs", "--rebuild-db"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"moved the damaged results database {ws.db_path} to " in out
    assert f"restored 3 run(s), 0 sweep(s) from {ws.results_dir} into {ws.db_path}" in out
    assert (  # the schema page's tables are lost: said, though none may have existed
        "could not read prompt tables from the damaged file: database disk image is malformed"
        in out
    )
    assert len(list(ws.root.glob("rbench.sqlite.corrupt-*"))) >= 1
    with ResultsDB(ws.db_path) as db:
        assert {rid: _export(db, rid) for rid in before} == before
        assert db.get_run(failed).error == "RuntimeError: boom"
    assert main([*home, "show", done.run_id]) == EXIT_OK
    assert capsys.readouterr().out == shown
    assert main([*home, "runs"]) == EXIT_OK
    assert capsys.readouterr().out == listed

    # a second rebuild on the healthy database adds nothing
    assert main([*home, "runs", "--rebuild-db"]) == EXIT_OK
    assert "restored 0 run(s)" in capsys.readouterr().out


def test_rebuild_recovers_run_folders_written_before_run_json(
    bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _ws(bench)
    result = run_benchmark(config(bench), ws)
    with ResultsDB(ws.db_path) as db:
        table = db.stage_table(result.run_id)
    (ws.results_dir / result.run_id / RUN_FILE).unlink()
    ws.db_path.unlink()
    assert main(["--workspace", str(ws.root), "runs", "--rebuild-db"]) == EXIT_OK
    assert "(partial: no run.json)" in capsys.readouterr().out
    with ResultsDB(ws.db_path) as db:
        run = db.get_run(result.run_id)
        assert (run.status, run.name) == ("done", "tiny")
        assert "without run.json" in (run.notes or "")
        rebuilt = db.stage_table(result.run_id)
    for stage, row in table.items():
        for metric in ("P@2", "R@2", "MRR", "lost"):
            assert rebuilt[stage][metric] == pytest.approx(row[metric]), (stage, metric)


def test_delete_and_prune(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _ws(bench)
    home = ["--workspace", str(ws.root)]
    kept = run_benchmark(config(bench), ws).run_id
    gone = run_benchmark(config(bench), ws).run_id
    with ResultsDB(ws.db_path) as db:
        failed = db.start_run("broken")
        db.finish_run(failed, "failed", error="RuntimeError: boom")
        live = db.start_run("live")  # owned by this (live) process
    (ws.results_dir / failed).mkdir(parents=True)

    assert main([*home, "runs", "--delete", gone, "nope"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith("rbench: error: no run 'nope'") and "nothing was deleted" in err
    assert (ws.results_dir / gone).is_dir()

    assert main([*home, "runs", "--delete", live]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rbench: error: run {live} is still running (process ")
    assert len(err.splitlines()) == 1

    assert main([*home, "runs", "--delete", gone]) == EXIT_OK
    out = capsys.readouterr().out.strip()
    assert out == f"deleted run {gone} (done, tiny) and {ws.results_dir / gone}"
    assert not (ws.results_dir / gone).exists()

    assert main([*home, "runs", "--prune"]) == EXIT_OK
    out = capsys.readouterr().out.strip()
    assert out == f"deleted run {failed} (failed, broken) and {ws.results_dir / failed}"
    assert main([*home, "runs", "--prune"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == "nothing to prune: no failed or interrupted runs"
    with ResultsDB(ws.db_path) as db:
        assert {r.id for r in db.list_runs()} == {kept, live}
        assert db.query("SELECT COUNT(*) FROM query_metrics WHERE run_id = ?", (gone,)) == [(0,)]
        db.finish_run(live, "done")
    shutil.rmtree(ws.results_dir / kept)
    assert main([*home, "runs", "--delete", kept]) == EXIT_OK
    assert "(it had no results folder)" in capsys.readouterr().out

"""Run states in the results database: failure reasons, stale runs, upgrades, damage."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.store import db as dbmod
from retrieval_bench.store.db import CorruptDBError, ResultsDB, failure_reason
from retrieval_bench.store.owner import current_owner, owner_alive

REPO = Path(__file__).resolve().parents[3]


def test_failure_reason_is_stored_and_read_back(tmp_path: Path) -> None:
    with ResultsDB(tmp_path / "r.sqlite") as db:
        rid = db.start_run("broken")
        db.finish_run(rid, "failed", {"total": 0.5}, error="retriever 'nope' is not registered")
        rec = db.get_run(rid)
        assert (rec.status, rec.error) == ("failed", "retriever 'nope' is not registered")
        ok = db.start_run("fine")
        db.finish_run(ok, "done")
        assert db.get_run(ok).error is None
        stopped = db.start_run("stopped")
        db.finish_run(stopped, "interrupted", error=failure_reason(KeyboardInterrupt()))
        assert db.get_run(stopped).status == "interrupted"
        assert db.get_run(stopped).error == "interrupted (Ctrl-C)"


def test_failure_reason_is_one_line() -> None:
    assert failure_reason(ConfigError("bad key\n  here")) == "bad key here"
    assert failure_reason(KeyError("x")) == "KeyError: 'x'"
    assert failure_reason(RuntimeError()) == "RuntimeError"


def test_upgrade_keeps_runs_and_their_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written before run states existed (schema 1) upgrades in place: rows of
    every table kept (rebuilding ``runs`` must not cascade into its children)."""
    path = tmp_path / "old.sqlite"
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS[:1])
    with ResultsDB(path) as old:
        old_id = "20240101-000000-abcdef"
        with old.transaction() as c:
            c.execute(
                "INSERT INTO runs (id, name, created_at, status) VALUES (?, 'v1', "
                "'2024-01-01T00:00:00+00:00', 'running')",
                (old_id,),
            )
        old.record_stage(old_id, "bm25", {"all": {"R@5": 0.5}}, failures={"q1": "timeout"})
        old.record_query_metrics(old_id, "bm25", {"q1": {"R@5": 0.5}})
        assert old.schema_version == 1
    monkeypatch.undo()
    with ResultsDB(path) as new:
        assert new.schema_version == len(dbmod.MIGRATIONS)
        rec = new.get_run(old_id)
        assert rec.status == "running" and rec.owner is None  # no owner: cannot tell
        assert new.stage_table(old_id) == {"bm25": {"R@5": 0.5}}
        assert new.query_metrics(old_id, "bm25") == {"q1": {"R@5": 0.5}}
        assert new.failures(old_id) == [("bm25", "q1", "timeout")]
        new.finish_run(old_id, "interrupted", error="stopped")
        assert new.query("PRAGMA foreign_keys")[0][0] == 1
        new.delete_run(old_id)  # the references still cascade after the rebuild
        assert new.query_metrics(old_id, "bm25") == {}


KILLED = """
import os, sys
from retrieval_bench.store.db import ResultsDB
db = ResultsDB(sys.argv[1])
print(db.start_run("killed"), flush=True)
os._exit(9)  # as if killed with kill -9: no chance to mark the run
"""


def test_run_whose_process_is_gone_reads_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(path)], cwd=REPO, capture_output=True, text=True
    )
    killed = proc.stdout.strip()
    with ResultsDB(path) as db:
        db.start_run("alive")  # this process: still running
        db.start_run("elsewhere", owner={"host": "not-" + socket.gethostname(), "pid": 1})
        me = current_owner()
        db.start_run("reused pid", owner={**me, "token": "another-boot:123"})
        db.start_run("no owner", owner={})
        runs = {r.name: r for r in db.list_runs()}
        assert runs["killed"].status == "interrupted"
        assert "ended before the run finished" in (runs["killed"].error or "")
        assert runs["alive"].status == "running" and runs["alive"].owner == me
        assert runs["elsewhere"].status == "running"  # another host: cannot be checked
        assert runs["no owner"].status == "running"
        if me["token"] is not None:  # Linux: a pid reused by another process is not the run
            assert runs["reused pid"].status == "interrupted"
        assert db.get_run(killed).status == "interrupted"
    con = sqlite3.connect(path)  # stored, not only shown
    assert con.execute("SELECT status FROM runs WHERE id = ?", (killed,)).fetchone() == (
        "interrupted",
    )
    con.close()


def test_owner_liveness() -> None:
    me = current_owner()
    assert owner_alive(me) is True
    assert owner_alive(None) is None
    assert owner_alive({"host": "x" + me["host"], "pid": os.getpid()}) is None
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert owner_alive({**me, "pid": child.pid, "token": None}) is False


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_results_database_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "rbench.sqlite"
    with ResultsDB(path) as db:
        for i in range(30):
            rid = db.start_run(f"run{i}", {"pad": "x" * 2000})
            db.record_query_metrics(rid, "bm25", {f"q{j}": {"R@5": 0.5} for j in range(200)})
    size = path.stat().st_size
    if damage == "truncate":
        with path.open("r+b") as fh:
            fh.truncate(size // 3)
    else:
        path.write_bytes(b"not a database at all" * 300)
    with pytest.raises(CorruptDBError) as err, ResultsDB(path) as db:
        db.list_runs()
        for r in db.list_runs():
            db.query_metrics(r.id, "bm25")
    message = str(err.value)
    assert str(path) in message and "rbench runs --rebuild-db" in message
    assert "\n" not in message

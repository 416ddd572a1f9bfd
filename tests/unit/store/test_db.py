"""The SQLite results database: round trips, migrations, concurrency, atomicity."""

from __future__ import annotations

import math
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.store import db as dbmod
from retrieval_bench.store.db import ResultsDB, ResultsDBError, UnknownRunError, new_run_id
from retrieval_bench.store.provenance import git_commit, package_versions, provenance
from retrieval_bench.types import Run, StageResult


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[ResultsDB]:
    with ResultsDB(tmp_path / "results.sqlite") as db:
        yield db


def test_run_id_format() -> None:
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", new_run_id())


def test_run_round_trip(store: ResultsDB) -> None:
    prov = provenance(["numpy"], tokenizer="cl100k", dataset_fingerprint="sha256:ab")
    rid = store.start_run(
        "baseline", {"k": 10, "chunker": {"budget": 512}}, prov, "sha256:ab", notes="first"
    )
    rec = store.get_run(rid)
    assert (rec.name, rec.status, rec.finished_at) == ("baseline", "running", None)
    assert rec.config == {"k": 10, "chunker": {"budget": 512}}
    assert rec.provenance["packages"]["numpy"] and rec.provenance["tokenizer"] == "cl100k"
    assert rec.dataset_fingerprint == "sha256:ab" and rec.notes == "first"
    store.finish_run(rid, "done", {"total_s": 12.5, "dense": 3.0})
    rec = store.get_run(rid)
    assert rec.status == "done" and rec.finished_at is not None
    assert rec.timings == {"total_s": 12.5, "dense": 3.0}
    rid2 = store.start_run("second")
    assert [r.id for r in store.list_runs()] == [rid2, rid]


def test_stage_round_trip(store: ResultsDB) -> None:
    rid = store.start_run("r")
    store.record_stage(
        rid,
        "dense",
        {"all": {"P@5": 0.4, "R@5": 0.8, "F1@5": 0.5333}, "leaks_path=false": {"P@5": 0.3}},
        seconds=1.5,
        llm_calls=0,
    )
    result = StageResult(
        "rerank",
        Run("rerank"),
        4.0,
        llm_calls=50,
        llm_tokens=12000,
        failures={"q7": "timeout"},
        inputs=("dense",),
    )
    store.record_stage_result(rid, result, {"all": {"P@5": 0.6, "MRR": math.nan}})
    table = store.stage_table(rid)
    assert list(table) == ["dense", "rerank"]
    assert list(table["dense"]) == ["P@5", "R@5", "F1@5"]  # recorded order
    assert table["dense"]["F1@5"] == 0.5333
    assert math.isnan(table["rerank"]["MRR"])
    assert store.stage_table(rid, "leaks_path=false") == {"dense": {"P@5": 0.3}}
    assert store.subsets(rid) == ["all", "leaks_path=false"]
    info = {s.stage: s for s in store.stages(rid)}
    assert info["rerank"].parent == "dense" and info["rerank"].llm_tokens == 12000
    assert info["rerank"].n_failures == 1 and info["dense"].seconds == 1.5
    assert store.failures(rid) == [("rerank", "q7", "timeout")]
    # re-recording a stage replaces it and keeps its position
    store.record_stage(rid, "dense", {"all": {"P@5": 0.45}})
    table = store.stage_table(rid)
    assert list(table) == ["dense", "rerank"] and table["dense"] == {"P@5": 0.45}


def test_query_metrics_bulk(store: ResultsDB) -> None:
    rid = store.start_run("r")
    per_query = {f"q{i}": {"P@5": i / 1000, "MRR": 1.0, "nDCG@10": math.nan} for i in range(3000)}
    assert store.record_query_metrics(rid, "dense", per_query) == 9000
    back = store.query_metrics(rid, "dense")
    assert len(back) == 3000 and back["q42"]["P@5"] == 0.042
    assert math.isnan(back["q1"]["nDCG@10"])
    assert store.query_metrics(rid, "other") == {}
    store.delete_run(rid)
    assert store.query_metrics(rid, "dense") == {}  # cascades


def test_unknown_run(store: ResultsDB) -> None:
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        store.get_run("nope")
    with pytest.raises(UnknownRunError):
        store.record_query_metrics("nope", "s", {"q": {"m": 1.0}})
    with pytest.raises(UnknownRunError):
        store.finish_run("nope", "done")
    with pytest.raises(ResultsDBError, match="status"):
        store.finish_run(store.start_run("r"), "weird")
    rid = store.start_run("r", run_id="fixed-id")
    assert rid == "fixed-id"
    with pytest.raises(ResultsDBError, match="already exists"):
        store.start_run("again", run_id="fixed-id")


def test_wal_mode_and_migrations_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with ResultsDB(path) as first:
        rid = first.start_run("kept")
        assert first.schema_version == len(dbmod.MIGRATIONS)
    for _ in range(3):
        with ResultsDB(path) as again:
            assert again.migrate() == len(dbmod.MIGRATIONS)
            assert again.get_run(rid).name == "kept"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(dbmod.MIGRATIONS)
    con.close()


def test_new_migrations_apply_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.sqlite"
    with ResultsDB(path) as old:
        rid = old.start_run("before upgrade")
    extra = (
        ("ALTER TABLE runs ADD COLUMN tags TEXT",),
        ("UPDATE runs SET tags = 'migrated'",),  # relies on the previous migration
    )
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS + extra)
    with ResultsDB(path) as new:
        assert new.schema_version == len(dbmod.MIGRATIONS)
        assert new.get_run(rid).name == "before upgrade"
        assert new.query("SELECT tags FROM runs")[0][0] == "migrated"
    with ResultsDB(path) as again:  # nothing re-applied (ALTER would fail)
        assert again.schema_version == len(dbmod.MIGRATIONS)
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS[:1])
    with pytest.raises(ResultsDBError, match="newer"):
        ResultsDB(path)


def test_failed_migration_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.sqlite"
    ResultsDB(path).close()
    bad = (("CREATE TABLE extra (x INTEGER)", "THIS IS NOT SQL"),)
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS + bad)
    with pytest.raises(sqlite3.OperationalError):
        ResultsDB(path)
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS[:-1])
    with ResultsDB(path) as db:
        assert db.schema_version == len(dbmod.MIGRATIONS)
        assert not db.query("SELECT name FROM sqlite_master WHERE name = 'extra'")


def test_concurrent_writers(tmp_path: Path) -> None:
    """Two connections (threads) writing the same store at once both succeed."""
    path = tmp_path / "shared.sqlite"
    ResultsDB(path).close()
    errors: list[BaseException] = []
    run_ids: list[str] = []
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        try:
            with ResultsDB(path, timeout=30) as db:
                barrier.wait()
                rid = db.start_run(name, {"worker": name})
                for stage in ("dense", "bm25", "rrf", "rerank"):
                    db.record_stage(rid, stage, {"all": {"P@5": 0.5}})
                    db.record_query_metrics(
                        rid, stage, {f"q{i}": {"P@5": 0.5, "R@5": 1.0} for i in range(2000)}
                    )
                db.finish_run(rid, "done", {"total": 1.0})
                run_ids.append(rid)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with ResultsDB(path) as db:
        assert {r.status for r in db.list_runs()} == {"done"}
        for rid in run_ids:
            assert len(db.query_metrics(rid, "rerank")) == 2000


def test_shared_instance_across_threads(store: ResultsDB) -> None:
    rid = store.start_run("r")

    def write(stage: str) -> None:
        store.record_query_metrics(rid, stage, {f"q{i}": {"m": 1.0} for i in range(500)})

    threads = [threading.Thread(target=write, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(store.query_metrics(rid, f"s{i}")) == 500 for i in range(4))


CRASH = """
import os, sys
from retrieval_bench.store.db import ResultsDB
db = ResultsDB(sys.argv[1])
rid = db.start_run("crashing")
db.record_stage(rid, "dense", {"all": {"P@5": 0.1}})
with db.transaction() as c:
    c.executemany(
        "INSERT INTO query_metrics VALUES (?, 'dense', ?, 'P@5', 0.1)",
        [(rid, f"q{i}") for i in range(1000)],
    )
    os._exit(3)  # killed mid-transaction
"""


def test_crash_mid_write_leaves_store_intact(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with ResultsDB(path) as db:
        good = db.start_run("good")
        db.record_query_metrics(good, "dense", {"q1": {"P@5": 1.0}})
        db.finish_run(good, "done")
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, "-c", CRASH, str(path)], cwd=repo, check=False)
    assert proc.returncode == 3
    with ResultsDB(path) as db:
        assert db.query("PRAGMA integrity_check")[0][0] == "ok"
        runs = {r.name: r for r in db.list_runs()}
        assert runs["good"].status == "done"
        assert db.query_metrics(good, "dense") == {"q1": {"P@5": 1.0}}
        crashed = runs["crashing"]
        assert crashed.status == "interrupted"  # its process is gone
        assert crashed.error is not None and "ended before the run finished" in crashed.error
        assert db.stage_table(crashed.id) == {"dense": {"P@5": 0.1}}  # committed part kept
        assert db.query_metrics(crashed.id, "dense") == {}  # uncommitted part gone


def test_provenance(tmp_path: Path) -> None:
    versions = package_versions(["numpy", "surely-not-installed-dist"])
    assert versions["numpy"] and versions["surely-not-installed-dist"] is None
    prov = provenance(
        ["numpy"],
        models={"dense": "all-MiniLM-L6-v2"},
        snapshot="pypi:attrs==23.1.0",
        commit="abc123",
        seed=7,
    )
    assert prov["models"] == {"dense": "all-MiniLM-L6-v2"}
    assert prov["git_commit"] == "abc123" and prov["seed"] == 7
    assert prov["python"] == sys.version.split()[0] and prov["platform"]


def test_git_commit_reads_dot_git(tmp_path: Path) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    git = tmp_path / "repo" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(sha + "\n")
    (tmp_path / "repo" / "sub").mkdir()
    assert git_commit(tmp_path / "repo" / "sub") == sha
    assert provenance([], repo_path=tmp_path / "repo")["git_commit"] == sha
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{sha} refs/heads/main\n")
    assert git_commit(tmp_path / "repo") == sha
    (git / "HEAD").write_text(sha)  # detached
    assert git_commit(tmp_path / "repo") == sha

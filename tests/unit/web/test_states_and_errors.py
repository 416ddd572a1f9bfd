"""Runs list pairing, runs that have no results, and readable error pages, on
small hand-made result stores (no benchmark needed)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.store.db import ResultsDB  # noqa: E402
from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import web_client  # noqa: E402
from tests.unit.web.htmltables import tables  # noqa: E402


def _run(db: ResultsDB, name: str, dataset: str, fp: str | None, status: str = "done") -> str:
    rid = db.start_run(name, config={"datasets": [{"name": dataset}], "table_k": 5},
                       dataset_fingerprint=fp)  # fmt: skip
    if status != "running":
        db.finish_run(rid, status)
    return rid


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "home")


def client_for(ws: Workspace) -> TestClient:
    # server errors come back as pages (what a browser gets), not as raised exceptions
    return web_client(create_app(ws), raise_server_exceptions=False)


def test_compare_with_previous_only_pairs_runs_on_the_same_datasets(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        a1 = _run(db, "a1", "shopapi", "fp-a")
        b1 = _run(db, "b1", "pytest", "fp-b")
        a2 = _run(db, "a2", "shopapi", "fp-a")
        b2 = _run(db, "b2", "pytest", "fp-b", status="failed")
        b3 = _run(db, "b3", "pytest", "fp-b")
        n1 = _run(db, "n1", "other", None)
        n2 = _run(db, "n2", "other", None)  # no fingerprint: the dataset names decide
    t = tables(client_for(ws).get("/").text)["runs"]
    offered = {row[0]: [h for h in links if h.startswith("/compare")]
               for row, links in zip(t.rows, t.links, strict=True)}  # fmt: skip
    assert offered[a2] == [f"/compare?base={a1}&cand={a2}"]
    assert offered[b3] == [f"/compare?base={b1}&cand={b3}"]  # not the failed b2, not a2
    assert offered[n2] == [f"/compare?base={n1}&cand={n2}"]
    assert offered[a1] == offered[b1] == offered[b2] == offered[n1] == []
    assert "shopapi" in t.column("datasets")[t.column("run").index(a1)]


@pytest.mark.parametrize("status", ["running", "failed"])
def test_a_run_without_results_says_so(ws: Workspace, status: str) -> None:
    with ResultsDB(ws.db_path) as db:
        rid = _run(db, "stuck", "shopapi", "fp", status=status)
    resp = client_for(ws).get(f"/runs/{rid}")
    assert resp.status_code == 200
    main = resp.text.split("<main>", 1)[1]
    assert "No results yet" in main and f"status-{status}" in main
    assert "<table" not in main  # no empty table


def test_a_failed_run_with_a_stored_reason_shows_it(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        rid = _run(db, "broke", "shopapi", "fp", status="running")
        db.finish_run(rid, "failed", error="ConfigError: retrievers.0.k1 is not a number")
        gone = _run(db, "killed", "shopapi", "fp", status="running")
        db.finish_run(gone, "interrupted", error="interrupted (Ctrl-C)")
    client = client_for(ws)
    main = client.get(f"/runs/{rid}").text.split("<main>", 1)[1]
    assert "retrievers.0.k1 is not a number" in main and "status-failed" in main
    main = client.get(f"/runs/{gone}").text.split("<main>", 1)[1]
    assert "interrupted (Ctrl-C)" in main and "status-interrupted" in main
    assert "No results yet" in main


def _corrupt(ws: Workspace, how: str) -> None:
    with ResultsDB(ws.db_path) as db:
        _run(db, "a", "shopapi", "fp")
    data = ws.db_path.read_bytes()
    if how == "truncated":
        ws.db_path.write_bytes(data[:50])  # cut inside the 100-byte header
    else:
        ws.db_path.write_bytes(b"this is not a database" * 100)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_corrupt_database_gives_a_readable_503_page(ws: Workspace, how: str) -> None:
    _corrupt(ws, how)
    client = client_for(ws)
    for path in ("/", "/runs/some-run", "/compare?base=a&cand=b", "/prompts"):
        resp = client.get(path)
        assert resp.status_code == 503, (path, resp.text[:300])
        assert resp.headers["content-type"].startswith("text/html")
        text = resp.text
        assert "<html" in text and "Internal Server Error" not in text
        assert str(ws.db_path) in text and "cannot be read" in text
        assert "What to do" in text
    api = client.get("/api/runs")
    assert api.status_code == 503 and str(ws.db_path) in api.json()["error"]


def test_unknown_run_and_stage_are_404_pages(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        rid = _run(db, "a", "shopapi", "fp")
    client = client_for(ws)
    for path in ("/runs/no-such-run", f"/runs/{rid}?stage=nope", "/runs/no-such-run/queries/q"):
        resp = client.get(path)
        assert resp.status_code == 404 and "What to do" in resp.text, path


def test_unknown_pages_and_missing_parameters_are_readable_pages(ws: Workspace) -> None:
    client = client_for(ws)
    missing = client.get("/no-such-page")
    assert missing.status_code == 404 and "What to do" in missing.text
    bad = client.get("/compare", params={"base": "a"})
    assert bad.status_code == 400 and "cand" in bad.text and "What to do" in bad.text
    assert client.get("/api/nothing").json()["error"]  # the API keeps answering JSON


def test_a_damaged_results_file_names_the_file_and_line(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        rid = _run(db, "a", "shopapi", "fp")
        db.record_stage(rid, "bm25", {"all": {"R@5": 0.5}}, parent="corpus")
        db.record_query_metrics(rid, "bm25", {"q1": {"R@5": 0.5}})
    path = ws.results_dir / rid / "queries.jsonl"
    path.parent.mkdir(parents=True)
    good = {"query_id": "q1", "query": "?", "gold_files": ["a.py"], "missing_gold": [],
            "stages": {"bm25": {"files": ["a.py"], "lost": [], "failed": None}}}  # fmt: skip
    path.write_text(json.dumps(good) + "\n" + '{"query_id": "q2", "que', encoding="utf-8")
    resp = client_for(ws).get(f"/runs/{rid}")
    assert resp.status_code == 500
    assert f"{path}:2" in resp.text and "What to do" in resp.text


def test_an_unexpected_error_is_a_readable_500_page(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_bench.web import runs

    def boom(*_a: object, **_k: object) -> str:
        raise RuntimeError("something odd")

    monkeypatch.setattr(runs, "runs_page", boom)
    resp = client_for(ws).get("/")
    assert resp.status_code == 500 and "<html" in resp.text
    assert "RuntimeError: something odd" in resp.text and "What to do" in resp.text


def test_sqlite_reports_the_corruption_we_render(ws: Workspace) -> None:
    """The pages above depend on sqlite raising DatabaseError for such files."""
    _corrupt(ws, "garbage")
    with pytest.raises(sqlite3.DatabaseError):
        conn = sqlite3.connect(ws.db_path)
        conn.execute("SELECT * FROM runs").fetchall()


def test_web_and_cli_compare_give_the_same_p_for_the_same_pair(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """40 queries: too many for an exact randomisation test, so p depends on the
    number of resamples, which must be the same default in both."""
    import random

    from retrieval_bench.cli import main
    from retrieval_bench.web.html import pval

    rng = random.Random(7)
    base_values = [rng.random() for _ in range(40)]
    cand_values = [min(1.0, max(0.0, v + 0.03 + rng.uniform(-0.3, 0.3))) for v in base_values]
    with ResultsDB(ws.db_path) as db:
        base, cand = _run(db, "base", "d", "fp"), _run(db, "cand", "d", "fp")
        for rid, values in ((base, base_values), (cand, cand_values)):
            db.record_stage(rid, "bm25", {"all": {"R@5": 0.5}}, parent="corpus")
            db.record_query_metrics(
                rid, "bm25", {f"q{i}": {"R@5": v} for i, v in enumerate(values)}
            )
    capsys.readouterr()
    assert main(["--workspace", str(ws.root), "compare", base, cand, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    # Monte Carlo p (2**40 sign vectors are too many to enumerate): 0.027 with 10,000
    # resamples, 0.034 with 2,000
    assert 0.01 < row["p_value"] < 0.1
    web = tables(client_for(ws).get("/compare", params={"base": base, "cand": cand}).text)
    (cells,) = web["comparison"].rows
    assert cells[web["comparison"].header.index("p")] == pval(row["p_value"])

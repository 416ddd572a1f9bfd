"""The run page's per-stage and span tables and the runs list's metric column,
against real runs on the shopapi fixture (TestClient): the CLI's headline Acc@k,
F1 at the token budget, seconds, the span-level table, and one number format
(three decimals for every metric, never ``1`` beside ``0.200``)."""

from __future__ import annotations

import re
import shutil
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

pytestmark = pytest.mark.integration

Bench = tuple[Workspace, str, str]
THREE = re.compile(r"^-?\d+\.\d{3}$")


@pytest.fixture(scope="module")
def client(bench_ws: Bench) -> TestClient:
    return web_client(create_app(bench_ws[0]))


def test_stage_table_has_the_cli_columns_acc_f1_at_budget_and_seconds(
    client: TestClient, bench_ws: Bench
) -> None:
    ws, both, _ = bench_ws
    stages = tables(client.get(f"/runs/{both}").text)["stages"]
    for column in ("Acc@5", "F1@8k", "seconds", "P@5", "R@5", "F1@5", "MRR", "nDCG@5", "lost"):
        assert column in stages.header, column
    stored = ResultsDB(ws.db_path).stage_table(both)
    for row in stages.rows:
        stage = row[0]
        for metric in ("Acc@5", "F1@8k", "R@5", "MRR", "lost", "seconds"):
            assert row[stages.header.index(metric)] == f"{stored[stage][metric]:.3f}"


def test_every_metric_has_three_decimals(client: TestClient, bench_ws: Bench) -> None:
    """A score of 1 reads ``1.000`` beside ``0.200``, in the stage and query tables."""
    _, both, _ = bench_ws
    page = tables(client.get(f"/runs/{both}").text)
    stages = page["stages"]
    metrics = [c for c in stages.header[1:] if c != "p" and not c.startswith("Δ")]
    cells = [r[stages.header.index(m)] for r in stages.rows for m in metrics]
    assert cells and all(THREE.match(c) or c == "–" for c in cells), cells
    queries = page["queries"]
    scores = [r[queries.header.index(m)] for r in queries.rows for m in ("R@5", "MRR")]
    assert "1.000" in scores and all(THREE.match(c) for c in scores), scores


def test_span_table_shows_line_and_chunk_metrics(client: TestClient, bench_ws: Bench) -> None:
    ws, both, _ = bench_ws
    spans = tables(client.get(f"/runs/{both}").text)["spans"]
    assert spans.header == ["stage", "line_P@5", "line_R@5", "line_F1@5", "chunk_Hit@5",
                            "chunk_MRR"]  # fmt: skip
    stored = ResultsDB(ws.db_path).stage_table(both)
    assert [r[0] for r in spans.rows] == ["bm25", "exact", "rrf"]
    for row in spans.rows:
        assert row[1:] == [f"{stored[row[0]][c]:.3f}" for c in spans.header[1:]]


def test_runs_list_shows_the_best_acc_at_k(client: TestClient, bench_ws: Bench) -> None:
    ws, both, bm25 = bench_ws
    runs = tables(client.get("/").text)["runs"]
    column = "Acc@k (best stage)"
    assert column in runs.header
    db = ResultsDB(ws.db_path)
    for run_id in (both, bm25):
        table = db.stage_table(run_id)
        best = max(table, key=lambda s: table[s]["Acc@5"])
        row = next(r for r in runs.rows if r[0] == run_id)
        assert row[runs.header.index(column)] == f"{table[best]['Acc@5']:.3f} ({best}, k=5)"


def test_a_question_that_could_not_be_run_says_so_in_the_query_table(
    bench_ws: Bench, tmp_path: Path
) -> None:
    """Its row read like any 0-scoring question, ``failed`` 0 included (that column
    counts a stage raising), while the line above said ``1 of … questions failed``."""
    ws, both, _ = bench_ws
    shutil.copytree(ws.root, tmp_path / "home")
    copy = Workspace(tmp_path / "home")
    with ResultsDB(copy.db_path) as db:
        prov = dict(db.get_run(both).provenance)
        ids = sorted(db.query_metrics(both, "rrf"))
        prov["question_counts"] = {"all": {"total": len(ids), "failed": {ids[0]: "no commit"}}}
        db.update_provenance(both, prov)
    page = web_client(create_app(copy)).get(f"/runs/{both}").text
    queries = tables(page)["queries"]
    question = dict(zip(queries.column("query"), queries.column("question"), strict=True))
    assert question[ids[0]].endswith("(not run: its snapshot failed; a miss)")
    assert not any("not run" in question[q] for q in ids[1:])

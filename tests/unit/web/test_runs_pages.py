"""Benchmark pages against a real run on the shopapi fixture (TestClient)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402

pytestmark = pytest.mark.integration

Bench = tuple[Workspace, str, str]


@pytest.fixture(scope="module")
def client(bench_ws: Bench) -> TestClient:
    return TestClient(create_app(bench_ws[0]))


def test_runs_list_links_every_run(client: TestClient, bench_ws: Bench) -> None:
    _, both, bm25 = bench_ws
    resp = client.get("/")
    assert resp.status_code == 200
    assert f'href="/runs/{both}"' in resp.text and f'href="/runs/{bm25}"' in resp.text
    from retrieval_bench.store.db import ResultsDB

    status = ResultsDB(bench_ws[0].db_path).get_run(both).status
    assert "bm25-exact" in resp.text and f'class="status {status}"' in resp.text
    assert client.get("/static/app.css").status_code == 200
    assert "fetch(" in client.get("/static/app.js").text


def test_run_page_has_stage_table_and_funnel(client: TestClient, bench_ws: Bench) -> None:
    ws, both, _ = bench_ws
    resp = client.get(f"/runs/{both}")
    assert resp.status_code == 200
    for text in ("<td>bm25</td>", "<td>exact</td>", "<td>rrf</td>", "<th>R@5</th>", "<th>MRR</th>",
                 "<th>nDCG@5</th>", "<th>lost</th>", "<svg"):  # fmt: skip
        assert text in resp.text
    from retrieval_bench.store.db import ResultsDB

    r5 = ResultsDB(ws.db_path).stage_table(both)["rrf"]["R@5"]
    assert f"R@5 {r5:.3f}" in resp.text  # the funnel bar's label carries the stored value


def test_drill_down_shows_gold_and_lost_files(client: TestClient, bench_ws: Bench) -> None:
    ws, both, _ = bench_ws
    queries = [json.loads(x) for x in (ws.results_dir / both / "queries.jsonl").open()]
    q = next(q for q in queries if any(s["lost"] for s in q["stages"].values()))
    lost = next(f for s in q["stages"].values() for f in s["lost"])
    resp = client.get(f"/runs/{both}/queries/{q['query_id']}")
    assert resp.status_code == 200
    assert q["query"].replace("'", "&#x27;") in resp.text
    assert f"<li class='lost'>{lost}</li>" in resp.text
    assert "<li class='gold'>" in resp.text
    assert client.get(f"/runs/{both}/queries/no-such-query").status_code == 404


def test_compare_page_shows_p_values_and_holm(client: TestClient, bench_ws: Bench) -> None:
    _, both, bm25 = bench_ws
    resp = client.get("/compare", params={"base": bm25, "cand": both})
    assert resp.status_code == 200
    assert "<th>Holm p</th>" in resp.text and "<th>p</th>" in resp.text
    assert re.search(r"<td>(0\.\d{3}|1\.000|&lt;0\.001)</td>", resp.text)
    assert "R@5" in resp.text
    staged = client.get("/compare", params={"base": bm25, "cand": f"{both}:rrf"})
    assert staged.status_code == 200 and "rrf" in staged.text
    # a stage on both sides: bm25 of one run against rrf of the other
    across = client.get("/compare", params={"base": f"{bm25}:bm25", "cand": f"{both}:rrf"})
    assert across.status_code == 200 and "bm25→rrf" in across.text


def test_unknown_run_is_a_404_page(client: TestClient) -> None:
    resp = client.get("/runs/no-such-run")
    assert resp.status_code == 404
    assert "no-such-run" in resp.text and "<html" in resp.text
    assert client.get("/compare", params={"base": "nope", "cand": "nope2"}).status_code == 404
    assert client.get("/runs/<script>").status_code == 404
    assert "<script>" not in client.get("/runs/<script>").text.split("<main>")[1]

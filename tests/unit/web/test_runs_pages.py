"""Benchmark pages against a real run on the shopapi fixture (TestClient)."""

from __future__ import annotations

import inspect
import json
import re

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import web_client  # noqa: E402

pytestmark = pytest.mark.integration

Bench = tuple[Workspace, str, str]


@pytest.fixture(scope="module")
def client(bench_ws: Bench) -> TestClient:
    return web_client(create_app(bench_ws[0]))


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
    # the funnel's context step: the stored R@5, labelled as the mean per query
    assert f"mean per query {r5:.3f} · pooled " in resp.text
    # the paired columns: every stage against the first retriever on R@table_k
    assert "<th>ΔR@5 vs bm25</th><th>p</th></tr>" in resp.text
    assert "<td>—</td><td>—</td></tr>" in resp.text  # the baseline's own row
    assert "Δ, p: R@5 per query paired with bm25" in resp.text


def test_drill_down_shows_gold_and_lost_files(client: TestClient, bench_ws: Bench) -> None:
    from retrieval_bench.store.trec import read_run
    from retrieval_bench.web.drilldown import lost_rank
    from retrieval_bench.web.funnel import chunk_path

    ws, both, _ = bench_ws
    queries = [json.loads(x) for x in (ws.results_dir / both / "queries.jsonl").open()]
    q = next(q for q in queries if q["stages"]["rrf"]["lost"])  # lost by the fusion
    stage, info = "rrf", q["stages"]["rrf"]
    lost = info["lost"][0]
    resp = client.get(f"/runs/{both}/queries/{q['query_id']}")
    assert resp.status_code == 200
    assert q["query"].replace("'", "&#x27;") in resp.text
    # where the lost file sat: its rank in the stage's input and in the stage's own list
    ranks = info["lost_ranks"][lost]
    assert f"<li class='lost'>{lost} <span class='rank'>({lost_rank(ranks)})</span>" in resp.text

    def rank(name: str) -> int | None:
        run = read_run(ws.results_dir / both / "runs" / "shopapi" / f"{name}.trec")
        files = list(dict.fromkeys(chunk_path(c) for c in run.ids(q["query_id"])))
        return files.index(lost) + 1 if lost in files else None

    assert ranks["input"] == {s: r for s in ("bm25", "exact") if (r := rank(s)) is not None}
    assert ranks["input"] and (ranks["here"] is None or ranks["here"] > 5)
    assert ranks["here"] == rank(stage)
    # a retriever's input is the snapshot: only its own rank
    solo = [s["lost_ranks"] for x in queries for n, s in x["stages"].items()
            if n != "rrf" and s["lost"]]  # fmt: skip
    assert solo and all(r["input"] == {} for ranks in solo for r in ranks.values())
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


# ---------------------------------------------------------------- run page: queries


def _floats(cells: list[str]) -> list[float]:
    return [float("nan") if c == "–" else float(c) for c in cells]


def test_run_page_lists_queries_with_metrics_of_the_chosen_stage(
    client: TestClient, bench_ws: Bench
) -> None:
    from retrieval_bench.store.db import ResultsDB
    from retrieval_bench.web.query_table import cell
    from tests.unit.web.htmltables import tables

    ws, both, _ = bench_ws
    db = ResultsDB(ws.db_path)
    page = client.get(f"/runs/{both}").text
    queries = tables(page)["queries"]
    assert queries.header[:2] == ["query", "question"]
    assert {"R@5", "P@5", "MRR", "nDCG@5", "lost", "failed"} <= set(queries.header)
    assert '<select name="stage"' in page and '<option value="bm25"' in page
    for stage, params in (("rrf", {}), ("bm25", {"stage": "bm25"})):  # default: the last stage
        t = tables(client.get(f"/runs/{both}", params=params).text)["queries"]
        stored = db.query_metrics(both, stage)
        assert sorted(r[0] for r in t.rows) == sorted(stored)
        for row, links in zip(t.rows, t.links, strict=True):
            assert links[0] == f"/runs/{both}/queries/{row[0]}"  # still opens the drill-down
            for metric in ("R@5", "MRR", "nDCG@5", "lost"):
                value = stored[row[0]][metric]
                assert row[t.header.index(metric)] == cell(metric, value), (stage, metric)
    missing = client.get(f"/runs/{both}", params={"stage": "no-such-stage"})
    assert missing.status_code == 404 and "bm25" in missing.text


def test_query_table_sorts_by_the_clicked_column(client: TestClient, bench_ws: Bench) -> None:
    from tests.unit.web.htmltables import tables

    _, both, _ = bench_ws
    t = tables(client.get(f"/runs/{both}").text)["queries"]
    href = t.header_links["MRR"]
    assert "sort=MRR" in href
    by_mrr = tables(client.get(href).text)["queries"]
    first = _floats(by_mrr.column("MRR"))
    assert first == sorted(first) and len(set(first)) > 1  # worst first for a score
    flipped = tables(client.get(by_mrr.header_links["MRR"]).text)["queries"]
    assert _floats(flipped.column("MRR")) == sorted(first, reverse=True)
    lost = tables(client.get(t.header_links["lost"]).text)["queries"]
    assert _floats(lost.column("lost")) == sorted(_floats(lost.column("lost")), reverse=True)
    by_id = tables(client.get(t.header_links["query"]).text)["queries"]
    assert by_id.column("query") == sorted(by_id.column("query"))
    assert client.get(f"/runs/{both}", params={"sort": "nope"}).status_code == 400


# ---------------------------------------------------------------- run page: funnel


def test_run_page_funnel_narrows_from_candidates_to_context(
    client: TestClient, bench_ws: Bench
) -> None:
    from retrieval_bench.store.db import ResultsDB
    from retrieval_bench.store.trec import read_run
    from retrieval_bench.web.html import rate
    from tests.unit.web.htmltables import tables

    ws, both, _ = bench_ws
    page = client.get(f"/runs/{both}").text
    funnel = tables(page)["funnel"]
    assert [r[0] for r in funnel.rows] == [
        "candidates (bm25 ∪ exact)", "fused (rrf)", "context (top 5 files of rrf)"]  # fmt: skip
    assert page.count("<polygon") >= 3 and 'aria-label="funnel"' in page
    # the context step is the final stage's R@5 as stored
    r5 = ResultsDB(ws.db_path).stage_table(both)["rrf"]["R@5"]
    assert funnel.rows[-1][funnel.header.index("mean recall per query")] == rate(r5)
    # the candidates step, recomputed here from the TREC files and queries.jsonl
    queries = [json.loads(x) for x in (ws.results_dir / both / "queries.jsonl").open()]
    runs = [read_run(ws.results_dir / both / "runs" / "shopapi" / f"{s}.trec")
            for s in ("bm25", "exact")]  # fmt: skip
    recalls, lost = [], 0
    for q in queries:
        files = {cid.rsplit(":", 2)[0] for r in runs for cid in r.ids(q["query_id"])}
        gold = set(q["gold_files"])
        recalls.append(len(gold & files) / len(gold))
        lost += len(gold - set(q["missing_gold"]) - files)
    cand = funnel.rows[0]
    assert cand[funnel.header.index("mean recall per query")] == rate(sum(recalls) / len(recalls))
    assert cand[funnel.header.index("lost here")] == str(lost)
    # each step's found = the previous step's found - what this step lost (the sets nest)
    pooled = [r[funnel.header.index("gold found (pooled)")].split("/") for r in funnel.rows]
    found = [int(f) for f, _ in pooled]
    assert [r[funnel.header.index("pooled recall")] for r in funnel.rows] == [
        rate(int(f) / int(g)) for f, g in pooled]  # fmt: skip
    lost_here = [int(r[funnel.header.index("lost here")]) for r in funnel.rows]
    assert all(found[i] == found[i - 1] - lost_here[i] for i in range(1, len(found)))
    solo = tables(client.get(f"/runs/{both}", params={"stage": "bm25"}).text)["funnel"]
    assert [r[0] for r in solo.rows] == ["candidates (bm25)", "context (top 5 files of bm25)"]


# ---------------------------------------------------------------- compare


def test_web_compare_gives_the_cli_p_values_and_intervals(
    client: TestClient, bench_ws: Bench, capsys: pytest.CaptureFixture[str]
) -> None:
    from retrieval_bench.cli import main
    from retrieval_bench.harness.compare.runs import DEFAULT_RESAMPLES
    from retrieval_bench.web.html import num, pval
    from tests.unit.web.htmltables import tables

    ws, both, bm25 = bench_ws
    capsys.readouterr()
    assert main(["--workspace", str(ws.root), "compare", bm25, both, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["n_resamples"] == DEFAULT_RESAMPLES
    page = client.get("/compare", params={"base": bm25, "cand": both}).text
    assert f"{DEFAULT_RESAMPLES} resamples" in page
    web = tables(page)["comparison"]
    cells = {(r[0], r[1]): r for r in web.rows}
    assert len(cells) == len(cli["rows"]) > 0
    for row in cli["rows"]:
        got = cells[(row["stage"], row["metric"])]
        assert got[web.header.index("p")] == pval(row["p_value"]), row
        ci = f"[{num(row['ci_low'])}, {num(row['ci_high'])}]"
        assert got[web.header.index("95% CI")] == ci, row


def test_cli_compare_default_resamples_is_the_shared_constant() -> None:
    from retrieval_bench.cli import build_parser
    from retrieval_bench.harness.compare.runs import DEFAULT_RESAMPLES, compare_runs

    args = build_parser().parse_args(["compare", "a", "b"])
    assert args.resamples == DEFAULT_RESAMPLES
    default = inspect.signature(compare_runs).parameters["n_resamples"].default
    assert default == DEFAULT_RESAMPLES

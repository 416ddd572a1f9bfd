"""The web compare page names each run's config and data, lists the stages only
one run has, and refuses runs on different data (same query ids, different
questions) unless ``allow_different_data=1``, which shows a warning — like
``rbench compare``. Real runs on the shopapi fixture (TestClient)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.store.db import ResultsDB  # noqa: E402
from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import REPO_ROOT, SHOPAPI, web_client  # noqa: E402
from tests.unit.web.htmltables import tables  # noqa: E402

pytestmark = pytest.mark.integration

Bench = tuple[Workspace, str, str]


@pytest.fixture(scope="module")
def client(bench_ws: Bench) -> TestClient:
    return web_client(create_app(bench_ws[0]))


def test_compare_page_names_configs_and_the_stage_one_run_lacks(
    client: TestClient, bench_ws: Bench
) -> None:
    ws, both, bm25 = bench_ws
    page = client.get("/compare", params={"base": bm25, "cand": both})
    assert page.status_code == 200
    compared = tables(page.text)["compared"]
    fingerprint = ResultsDB(ws.db_path).get_run(both).dataset_fingerprint
    assert [r[:2] for r in compared.rows] == [["base", bm25], ["candidate", both]]
    assert compared.rows[0][2].startswith("bm25-only (")
    assert compared.rows[1][2].startswith("bm25-exact (")
    assert compared.rows[1][3] == f"shopapi ({fingerprint})"
    assert (
        f"stages not compared: only in baseline {bm25}: none; only in candidate {both}: exact"
        in page.text
    )
    assert "measured on different data" not in page.text  # the same 10 questions


def _run(ws: Workspace, tmp: Path, name: str, questions: Path) -> str:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark

    cfg = {
        "name": name,
        "datasets": [{"name": "shopapi", "questions": str(questions), "snapshot": str(SHOPAPI),
                      "limit": 4}],
        "retrievers": [{"name": "bm25"}],
        "table_k": 5,
    }  # fmt: skip
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return run_benchmark(load_config(path), ws).run_id


@pytest.fixture(scope="module")
def different_data(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Workspace, str, str]]:
    """(workspace, a run on shopapi's questions, a run on other questions with the same ids)."""
    tmp = tmp_path_factory.mktemp("web-different-data")
    rows = [json.loads(x) for x in (SHOPAPI / "questions.jsonl").read_text().splitlines() if x]
    other = tmp / "other.jsonl"
    other.write_text("".join(json.dumps({**r, "query": f"Another question: {r['query']}"}) + "\n"
                             for r in rows), encoding="utf-8")  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
        ws = Workspace(tmp / "home")
        original = _run(ws, tmp, "original", SHOPAPI / "questions.jsonl")
        edited = _run(ws, tmp, "edited", other)
        yield ws, original, edited


def test_compare_page_refuses_runs_on_different_data(
    different_data: tuple[Workspace, str, str],
) -> None:
    ws, original, edited = different_data
    client = web_client(create_app(ws))
    db = ResultsDB(ws.db_path)
    fp_a = db.get_run(original).dataset_fingerprint
    fp_b = db.get_run(edited).dataset_fingerprint
    assert fp_a and fp_b and fp_a != fp_b
    refused = client.get("/compare", params={"base": original, "cand": edited})
    assert refused.status_code == 400
    assert (
        f"runs {original} and {edited} were measured on different data ({original}: shopapi, "
        f"dataset fingerprint {fp_a}; {edited}: shopapi, dataset fingerprint {fp_b}): the same "
        "query id may be a different question"
    ) in refused.text
    assert "comparison" not in tables(refused.text)  # no table of paired numbers
    anyway = f"/compare?base={original}&amp;cand={edited}&amp;allow_different_data=1"
    assert f'href="{anyway}"' in refused.text

    allowed = client.get(anyway.replace("&amp;", "&"))
    assert allowed.status_code == 200
    assert "warning: runs " in allowed.text and "paired by id anyway" in allowed.text
    assert tables(allowed.text)["comparison"].rows

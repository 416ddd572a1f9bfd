"""Query ids that are not URL-safe (namespaced or SWE-bench-like ids with ``/``, and
``%``, ``#``, ``?``, spaces, unicode) open their drill-down from the run page."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.web.html import esc  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import REPO_ROOT, SHOPAPI, web_client  # noqa: E402
from tests.unit.web.htmltables import tables  # noqa: E402

pytestmark = pytest.mark.integration

ODD_IDS = [
    "pkg/sub-123",
    "ds:a/b",
    "50% off",
    "issue #7?",
    "with space",
    "ünï/cødé-問題",
    "a//b/",
]


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str, dict[str, str]]:
    """(workspace, run id, query id -> question) of a bm25 run on shopapi whose
    questions carry :data:`ODD_IDS`."""
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark

    tmp = tmp_path_factory.mktemp("web-odd-ids")
    rows = [json.loads(x) for x in (SHOPAPI / "questions.jsonl").open(encoding="utf-8")]
    rows = [dict(r, id=qid) for r, qid in zip(rows, ODD_IDS, strict=False)]
    questions = tmp / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = {
        "name": "odd-ids",
        "datasets": [{"name": "shopapi", "questions": str(questions), "snapshot": str(SHOPAPI)}],
        "retrievers": [{"name": "bm25"}],
        "table_k": 5,
    }
    path = tmp / "odd-ids.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
        ws = Workspace(tmp / "home")
        run_id = run_benchmark(load_config(path), ws).run_id
    return ws, run_id, {r["id"]: r["query"] for r in rows}


def test_drill_down_link_round_trips_odd_query_ids(
    odd_run: tuple[Workspace, str, dict[str, str]],
) -> None:
    ws, run_id, texts = odd_run
    assert sorted(texts) == sorted(ODD_IDS)
    client = web_client(create_app(ws))
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    queries = tables(page.text)["queries"]
    followed = set()
    for row, links in zip(queries.rows, queries.links, strict=True):
        qid, href = row[0], links[0]
        assert qid in texts
        assert "#" not in href and "?" not in href and " " not in href  # quoted whole
        resp = client.get(href)
        assert resp.status_code == 200, (qid, href, resp.text[:300])
        assert texts[qid].replace("'", "&#x27;") in resp.text
        assert f'href="{esc(href)}"' in resp.text  # the breadcrumb links back to itself
        followed.add(qid)
    assert followed == set(ODD_IDS)
    # an id that only shares a prefix with a real one is still unknown
    assert client.get(f"/runs/{run_id}/queries/pkg%2Fsub-1234").status_code == 404

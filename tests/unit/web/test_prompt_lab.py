"""Prompt lab pages and API with a ScriptedLLM (TestClient, temp workspace)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import USE_CASE, oracle_llm, web_client  # noqa: E402

API = f"/api/prompts/{USE_CASE}"


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    ws = Workspace(tmp_path / "home")
    llm = oracle_llm(ws)
    return web_client(create_app(ws, llm=lambda: llm))


def run_and_wait(client: TestClient, prompt: str | None = None) -> dict[str, object]:
    resp = client.post(f"{API}/run", json={"prompt": prompt} if prompt else {})
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["id"]
    for _ in range(400):  # bounded poll, as the page does
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] != "running":
            assert job["status"] == "done", job
            return dict(job["result"])
        time.sleep(0.05)
    raise AssertionError("prompt run did not finish")


def result_order(html: str) -> list[str]:
    section = html.split("<div id='results'>", 1)[1].split("</div>", 1)[0]
    return re.findall(rf'href="/prompts/{USE_CASE}/runs/[^/]+/([^"]+)"', section)


def test_lab_page_lists_examples_and_controls(client: TestClient) -> None:
    resp = client.get(f"/prompts/{USE_CASE}")
    assert resp.status_code == 200
    for text in ("py-nameerror", "go-readlines", "Run all prompts", "save-row", "save-prompt",
                 "Run this prompt", "No runs yet", "rows as CSV"):  # fmt: skip
        assert text in resp.text
    assert client.get("/prompts").status_code == 200
    assert client.get("/prompts/no-such-use-case").status_code == 404


def test_editing_a_prompt_then_rerunning_changes_the_sorted_table(client: TestClient) -> None:
    first = run_and_wait(client)
    lab = client.get(API).json()
    names = [p["name"] for p in lab["prompts"]]
    assert len(names) >= 2
    before = result_order(client.get(f"/prompts/{USE_CASE}").text)
    assert sorted(before) == sorted(names)
    target = next(p for p in lab["prompts"] if p["name"] != before[0])
    edited = {**target, "user": target["user"] + "\nORACLE"}
    resp = client.post(f"{API}/prompts", json=edited)
    assert resp.status_code == 200 and resp.json()["version"] == target["version"] + 1
    second = run_and_wait(client)
    assert second["run_id"] != first["run_id"]
    page = client.get(f"/prompts/{USE_CASE}").text
    after = result_order(page)
    assert after[0] == target["name"] != before[0]
    assert "<svg" in page and str(second["run_id"]) in page  # history chart and list
    detail = client.get(f"/prompts/{USE_CASE}/runs/{second['run_id']}/{target['name']}")
    assert detail.status_code == 200 and "py-nameerror" in detail.text


def test_editing_a_row_changes_the_counts(client: TestClient) -> None:
    lab = client.get(API).json()
    oracle = {**lab["prompts"][0], "user": lab["prompts"][0]["user"] + " ORACLE"}
    assert client.post(f"{API}/prompts", json=oracle).status_code == 200
    run_and_wait(client, oracle["name"])
    row = lab["rows"][0]
    wrong = "concept" if row["expected"]["category"] != "concept" else "howto"
    edit = {**row, "expected": {**row["expected"], "category": wrong}}
    saved = client.post(f"{API}/rows", json=edit)
    assert saved.status_code == 200 and saved.json()["expected"]["category"] == wrong
    n = len(lab["rows"])
    cells = client.get(f"/prompts/{USE_CASE}").text
    assert re.search(rf"<td>{n}</td><td>\d+</td><td>0/{n}</td>", cells)  # all categories right
    run_and_wait(client, oracle["name"])
    cells = client.get(f"/prompts/{USE_CASE}").text
    assert re.search(rf"<td>{n - 1}</td><td>\d+</td><td>0/{n}</td>", cells)


def test_stale_version_is_a_409_with_the_message(client: TestClient) -> None:
    lab = client.get(API).json()
    prompt, row = lab["prompts"][0], lab["rows"][0]
    assert client.post(f"{API}/prompts", json={**prompt, "system": "be brief"}).status_code == 200
    stale = client.post(f"{API}/prompts", json={**prompt, "system": "be verbose"})
    assert stale.status_code == 409 and prompt["name"] in stale.json()["error"]
    q1 = {**row, "variables": {"question": "edited once"}}
    assert client.post(f"{API}/rows", json=q1).status_code == 200
    stale_row = client.post(f"{API}/rows", json={**row, "variables": {"question": "edit 2"}})
    assert stale_row.status_code == 409 and stale_row.json()["error"]
    assert client.get(API).json()["prompts"][0]["system"] == "be brief"


def test_malformed_csv_import_is_a_400_with_the_line_and_stores_nothing(
    client: TestClient,
) -> None:
    before = client.get(API).json()["rows"]
    bad = "id,question,category,language\nnew-1,How?,howto,go\nnew-2,What?,not-a-category,go\n"
    resp = client.post(f"{API}/import", params={"kind": "rows", "filename": "mine.csv"},
                       json={"content": bad})  # fmt: skip
    assert resp.status_code == 400
    assert "mine.csv:3" in resp.json()["error"]
    assert client.get(API).json()["rows"] == before
    good = "id,question,category,language\nnew-1,How do I sort in Go?,howto,go\n"
    ok = client.post(f"{API}/import", params={"kind": "rows", "filename": "ok.csv"},
                     json={"content": good})  # fmt: skip
    assert ok.status_code == 200
    assert len(client.get(API).json()["rows"]) == len(before) + 1


def test_export_downloads_csv_and_json(client: TestClient) -> None:
    csv = client.get(f"{API}/export", params={"kind": "rows", "format": "csv"})
    assert csv.status_code == 200 and csv.text.startswith("id,question,category,language")
    assert "attachment" in csv.headers["content-disposition"]
    js = client.get(f"{API}/export", params={"kind": "prompts", "format": "json"})
    assert js.status_code == 200 and js.json()["use_case"] == USE_CASE


def test_user_data_is_escaped(client: TestClient) -> None:
    row = {"id": "x-<b>", "version": 0, "variables": {"question": "<script>alert(1)</script>"},
           "expected": {"category": "bug", "language": "go"}}  # fmt: skip
    assert client.post(f"{API}/rows", json=row).status_code == 200
    page = client.get(f"/prompts/{USE_CASE}").text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_lab_text_names_the_button_and_textareas_fit_their_text(client: TestClient) -> None:
    page = client.get(f"/prompts/{USE_CASE}").text
    hint = page.split("No runs yet", 1)[1].split("</p>", 1)[0]
    button = re.search(r"<button id='run-all'>([^<]+)</button>", page)
    assert button is not None and button.group(1) in hint
    lab = client.get(API).json()
    long_user = "\n".join(f"line {i}" for i in range(12))
    prompt = {**lab["prompts"][0], "user": lab["prompts"][0]["user"] + "\n" + long_user}
    assert client.post(f"{API}/prompts", json=prompt).status_code == 200
    page = client.get(f"/prompts/{USE_CASE}").text
    areas = re.findall(r"<textarea ([^>]*)>([^<]*)</textarea>", page)
    assert areas
    for attrs, text in areas:
        rows = int(re.search(r'rows="(\d+)"', attrs).group(1))  # type: ignore[union-attr]
        assert rows >= text.count("\n") + 1, (attrs, text[:40])
        assert "autosize" in attrs  # grows while typing (static/app.js)


def test_prompt_lab_index_shows_shipped_use_cases_as_shipped(tmp_path: Path) -> None:
    from tests.unit.web.htmltables import tables

    fresh = web_client(create_app(Workspace(tmp_path / "fresh")))
    t = tables(fresh.get("/prompts").text)["use-cases"]
    row = t.rows[t.column("use case").index(USE_CASE)]
    assert row[t.header.index("rows")] == "10" and row[t.header.index("prompts")] == "3"
    assert "shipped" in row[t.header.index("state")]
    fresh.get(f"/prompts/{USE_CASE}")  # opening the lab loads the examples
    t = tables(fresh.get("/prompts").text)["use-cases"]
    row = t.rows[t.column("use case").index(USE_CASE)]
    assert row[t.header.index("rows")] == "10" and "shipped" not in row[t.header.index("state")]

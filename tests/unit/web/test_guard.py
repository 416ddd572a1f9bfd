"""The guard in front of the web UI's routes (retrieval_bench/web/guard.py,
docs/architecture.md#web-ui-security), request by request with TestClient; the
same rules over real HTTP are in tests/integration/test_serve.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402
from starlette.requests import HTTPConnection  # noqa: E402

from retrieval_bench.prompt_eval.errors import UnknownUseCaseError  # noqa: E402
from retrieval_bench.prompt_eval.usecase import registered_use_case  # noqa: E402
from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.web.guard import Guard, cookie_name, is_loopback  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import USE_CASE  # noqa: E402

TOKEN = "s3cret-token-for-tests"
PROMPTS = f"/api/prompts/{USE_CASE}/prompts"


def client(tmp_path: Path, host: str = "127.0.0.1", base: str = "http://127.0.0.1:8000",
           **headers: str) -> TestClient:  # fmt: skip
    app = create_app(Workspace(tmp_path / "home"), guard=Guard.new(host, TOKEN))
    return TestClient(app, base_url=base, headers=headers, follow_redirects=False)


def a_prompt(c: TestClient) -> dict[str, object]:
    return dict(c.get(f"/api/prompts/{USE_CASE}").json()["prompts"][0])


def test_loopback_names_and_cookie_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "example.com"))
    assert cookie_name("127.0.0.1:8765") == "rbench-token-8765"
    assert cookie_name("[::1]:9000") == "rbench-token-9000"
    assert cookie_name("localhost") == "rbench-token-80"


def test_writes_need_the_token_in_a_header_not_only_the_cookie(tmp_path: Path) -> None:
    c = client(tmp_path)
    prompt = a_prompt(c)
    assert c.post(PROMPTS, json=prompt).status_code == 403
    c.cookies.set(cookie_name("127.0.0.1:8000"), TOKEN)
    assert c.post(PROMPTS, json=prompt).status_code == 403  # a cookie rides along cross-site
    assert c.post(PROMPTS, json=prompt, headers={"X-RBench-Token": "wrong"}).status_code == 403
    ok = c.post(PROMPTS, json=prompt, headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    again = c.post(PROMPTS, json={**prompt, "version": ok.json()["version"]},
                   headers={"X-RBench-Token": TOKEN})  # fmt: skip
    assert again.status_code == 200


def test_origin_must_be_the_address_asked(tmp_path: Path) -> None:
    c = client(tmp_path, **{"X-RBench-Token": TOKEN})
    prompt = a_prompt(c)
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "file://"):
        resp = c.post(PROMPTS, json=prompt, headers={"Origin": origin})
        assert resp.status_code == 403 and "cross-origin" in resp.json()["error"], origin
    same = c.post(PROMPTS, json=prompt, headers={"Origin": "http://127.0.0.1:8000"})
    assert same.status_code == 200


def test_only_json_bodies_are_accepted(tmp_path: Path) -> None:
    c = client(tmp_path, **{"X-RBench-Token": TOKEN})
    for ctype, body in (("text/plain", "{}"), ("application/x-www-form-urlencoded", "a=b"),
                        ("multipart/form-data; boundary=x", "--x--"), ("", "{}")):  # fmt: skip
        resp = c.post(f"/api/prompts/{USE_CASE}/run", content=body,
                      headers={"Content-Type": ctype} if ctype else {})  # fmt: skip
        assert resp.status_code == 415, ctype
        assert "application/json" in resp.json()["error"]
    csv = "id,question,category,language\nn,Why?,howto,go\n"
    imported = c.post(f"/api/prompts/{USE_CASE}/import", params={"filename": "x.csv"},
                      json={"content": csv})  # fmt: skip
    assert imported.status_code == 200, imported.text


def test_a_foreign_host_is_refused_and_loopback_names_are_not(tmp_path: Path) -> None:
    c = client(tmp_path)
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", ""):
        resp = c.get("/prompts", headers={"Host": host})
        assert resp.status_code == 400, host
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST"):
        assert c.get("/prompts", headers={"Host": host}).status_code == 200, host


def test_a_malformed_host_is_a_400_not_a_crash(tmp_path: Path) -> None:
    # the port was not checked: ``localhost:1@evil`` was served (200), and with
    # ``?token=`` its cookie name ``rbench-token-1@evil`` was a 500 (CookieError)
    for host in ("127.0.0.1", "0.0.0.0"):
        c = client(tmp_path, host=host)
        for bad in ("localhost:1@evil", "localhost:abc", "[::1]junk", "[::1]:80x"):
            assert c.get("/prompts", headers={"Host": bad}).status_code == 400, (host, bad)
            login = c.get(f"/prompts?token={TOKEN}", headers={"Host": bad})
            assert login.status_code == 400, (host, bad)


def test_login_never_redirects_to_another_site() -> None:
    # ``GET //evil.example/?token=…`` redirected to ``//evil.example/`` (another
    # site); the path is sent raw here, as curl sends it (a client would join it)
    guard = Guard.new("127.0.0.1", TOKEN)
    for path in ("//evil.example/", "/\\evil.example/"):
        scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
                 "query_string": f"token={TOKEN}".encode(), "root_path": "",
                 "headers": [(b"host", b"127.0.0.1:8000")]}  # fmt: skip
        resp = guard.check(HTTPConnection(scope))
        assert resp is not None and resp.status_code == 303, path
        assert resp.headers["location"] == "/evil.example/", path


def test_off_loopback_every_request_needs_the_token(tmp_path: Path) -> None:
    c = client(tmp_path, host="192.168.1.5", base="http://192.168.1.5:8000")
    page = c.get("/prompts")
    assert page.status_code == 403 and "rbench serve" in page.text
    assert c.get("/static/app.js").status_code == 403
    assert c.get("/api/runs").status_code == 403
    assert c.get("/prompts", headers={"X-RBench-Token": TOKEN}).status_code == 200
    assert c.get("/prompts", headers={"Host": "other.example:8000"}).status_code == 400
    login = c.get("/prompts?token=" + TOKEN)
    assert login.status_code == 303 and login.headers["location"] == "/prompts"
    assert c.get("/prompts").status_code == 200  # the cookie now
    anywhere = client(tmp_path, host="0.0.0.0", base="http://box.lan:8000")
    assert anywhere.get("/prompts").status_code == 403  # any name, but the token
    assert anywhere.get("/prompts", headers={"X-RBench-Token": TOKEN}).status_code == 200


def test_login_keeps_the_rest_of_the_address(tmp_path: Path) -> None:
    c = client(tmp_path)
    resp = c.get(f"/compare?base=a&token={TOKEN}&cand=b")
    assert resp.status_code == 303 and resp.headers["location"] == "/compare?base=a&cand=b"
    assert c.get("/?token=nope").status_code == 403


def test_pages_cannot_be_framed_and_swagger_is_off(tmp_path: Path) -> None:
    c = client(tmp_path)
    resp = c.get("/")
    assert resp.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]
    assert c.get("/api/docs").status_code == 404 and c.get("/docs").status_code == 404
    assert c.get("/api/openapi.json").status_code == 200


def test_use_cases_are_looked_up_by_registered_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text("open('ran', 'w').close()\n", encoding="utf-8")
    for ref in ("evil.py:X", "evil:X", "os:path", USE_CASE + ":X"):
        with pytest.raises(UnknownUseCaseError, match="registered"):
            registered_use_case(ref)
    assert not (tmp_path / "ran").exists()
    assert registered_use_case(USE_CASE).name == USE_CASE

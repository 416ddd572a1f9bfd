"""``rbench serve`` as a user starts it (a real process, real HTTP requests): the
token it prints, the guard in front of every route (docs/architecture.md#web-ui-security)
and its one-line refusals to start.

The server runs in a temp folder that holds ``evil.py`` and ``evilmod.py``, each
writing a file when run or imported: no address may make the server run them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")

USE_CASE = "code_questions"
API = f"/api/prompts/{USE_CASE}"
EVIL = "import pathlib\npathlib.Path({name!r}).write_text('ran')\n"
CROSS_SITE = {"Origin": "http://evil.example", "Content-Type": "text/plain"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RBENCH_TOKEN"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def rbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rbench ARGS`` in ``cwd``; bounded, so a server that starts anyway fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "retrieval_bench.cli", *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@dataclass
class Served:
    base: str
    port: int
    token: str
    cwd: Path
    proc: subprocess.Popen[str]

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=headers, follow_redirects=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    cwd = tmp_path_factory.mktemp("serve-cwd")
    (cwd / "ws").mkdir()
    (cwd / "evil.py").write_text(EVIL.format(name="ran-evil-py"), encoding="utf-8")
    (cwd / "evilmod.py").write_text(EVIL.format(name="ran-evilmod"), encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "retrieval_bench.cli", "--workspace", "ws", "serve",
         "--port", str(port)],
        cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the address line comes before requests are served
    found = re.search(r"\?token=(\S+)", line)
    try:
        assert f"http://127.0.0.1:{port}/" in line, line
        yield Served(f"http://127.0.0.1:{port}", port, found.group(1) if found else "", cwd, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_start_line_gives_the_address_with_the_token(served: Served) -> None:
    assert len(served.token) >= 32
    with served.client() as c:
        login = c.get(f"/?token={served.token}")
        assert login.status_code == 303 and login.headers["location"] == "/"
        cookie = login.headers["set-cookie"]
        assert cookie.startswith(f"rbench-token-{served.port}={served.token};")
        assert "samesite=strict" in cookie.lower()
        assert c.get("/?token=not-the-token").status_code == 403
        assert c.get("/").status_code == 200  # reading stays open on loopback
        assert c.get("/").headers["x-frame-options"] == "DENY"


def test_an_address_never_makes_the_server_run_code(served: Served) -> None:
    with served.client(**{"X-RBench-Token": served.token}) as c:
        for path in ("/prompts/evil.py:X", "/api/prompts/evil.py:X", "/api/prompts/evilmod:X",
                     "/api/prompts/this:X", "/prompts/evil.py:X/runs/1/p",
                     "/api/prompts/evil.py:X/export"):  # fmt: skip
            assert c.get(path).status_code == 404, path
        saved = c.post("/api/prompts/evil.py:X/rows", json={"id": "r"})
        assert saved.status_code == 404
    # neither file ran nor was imported (each would have written ran-*)
    assert sorted(p.name for p in served.cwd.iterdir()) == ["evil.py", "evilmod.py", "ws"]


def test_a_cross_site_post_is_refused_and_changes_nothing(served: Served) -> None:
    with served.client() as c:
        before = c.get(API).json()
        prompt = {**before["prompts"][0], "system": "changed from another site"}
        body = json.dumps(prompt)
        assert c.post(f"{API}/prompts", content=body, headers=CROSS_SITE).status_code == 403
        rows = json.dumps({"content": "id,question,category,language\n"})
        replace = f"{API}/import?kind=rows&filename=x.csv&replace=true"
        assert c.post(replace, content=rows, headers=CROSS_SITE).status_code == 403
        assert c.post(f"{API}/run", content="{}", headers=CROSS_SITE).status_code == 403
        # the same site without the token (no cookie, no header) is refused too
        same = {"Origin": served.base, "Content-Type": "application/json"}
        refused = c.post(f"{API}/prompts", content=body, headers=same)
        assert refused.status_code == 403 and "token" in refused.json()["error"]
        # the token, but a text/plain body (what a cross-site form can send): 415
        plain = {"X-RBench-Token": served.token, "Content-Type": "text/plain"}
        assert c.post(f"{API}/prompts", content=body, headers=plain).status_code == 415
        assert c.get(API).json() == before
        ok = c.post(f"{API}/prompts", json=prompt, headers={"X-RBench-Token": served.token})
        assert ok.status_code == 200, ok.text


def test_a_foreign_host_is_a_400(served: Served) -> None:
    with served.client() as c:
        for host in ("evil.example", f"evil.example:{served.port}"):
            resp = c.get("/", headers={"Host": host})
            assert resp.status_code == 400 and "evil.example" in resp.text
        post = c.post(f"{API}/run", json={},
                      headers={"Host": "evil.example", "X-RBench-Token": served.token})  # fmt: skip
        assert post.status_code == 400
        assert c.get("/", headers={"Host": f"localhost:{served.port}"}).status_code == 200
        # a loopback name with a port that is not one: 400 (was 200, and 500 at login)
        for host in ("localhost:1@evil.example", "127.0.0.1:x"):
            assert c.get("/", headers={"Host": host}).status_code == 400, host
            login = c.get(f"/?token={served.token}", headers={"Host": host})
            assert login.status_code == 400, host


def test_swagger_is_off_and_the_schema_is_local(served: Served) -> None:
    with served.client() as c:
        assert c.get("/api/docs").status_code == 404
        assert c.get("/api/openapi.json").json()["info"]["title"] == "rbench"


# ------------------------------------------------------------- refusals to start
def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rbench: error: "), proc.stderr
    assert "serving" not in proc.stderr
    return lines[0]


def test_a_public_host_without_a_token_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    port = str(_free_port())
    line = _one_line_error(rbench("--workspace", "ws", "serve", "--host", "0.0.0.0",
                                  "--port", port, cwd=tmp_path))  # fmt: skip
    assert "0.0.0.0" in line and "--token" in line and "RBENCH_TOKEN" in line
    bad = _one_line_error(rbench("--workspace", "ws", "serve", "--token", "a b", cwd=tmp_path))
    assert "--token must be" in bad


def test_a_busy_port_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        line = _one_line_error(rbench("--workspace", "ws", "serve", "--port", port, cwd=tmp_path))
    assert f"127.0.0.1:{port}" in line and "--port" in line
    odd = _one_line_error(rbench("--workspace", "ws", "serve", "--port", "70000", cwd=tmp_path))
    assert "--port 70000" in odd


def test_a_missing_workspace_is_one_line(tmp_path: Path) -> None:
    port = str(_free_port())
    line = _one_line_error(rbench("--workspace", "nope", "serve", "--port", port, cwd=tmp_path))
    assert str(tmp_path / "nope") in line and "does not exist" in line
    (tmp_path / "afile").write_text("", encoding="utf-8")  # it exists: not "does not exist"
    line = _one_line_error(rbench("--workspace", "afile", "serve", "--port", port, cwd=tmp_path))
    assert str(tmp_path / "afile") in line and "is not a folder" in line

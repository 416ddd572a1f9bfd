"""Browser-test fixtures: a temp workspace with two REAL shopapi benchmark runs and
the prompt lab (ScriptedLLM answering right only for prompts containing ``ORACLE``,
as in tests/unit/web), served by uvicorn on a free 127.0.0.1 port in a background
thread; a second server over a workspace whose results database is damaged (for
the error page); and a headless Debian Chromium driven by Selenium.

The browser is required, not optional: without /usr/bin/chromium the tests fail
with the apt-get command to run (``make test`` installs it). The driver path is
given explicitly so selenium-manager never goes to the network.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.workspace import Workspace
from tests.unit.web.conftest import REPO_ROOT, _benchmark, oracle_llm

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL_HINT = "install it with: sudo apt-get install -y chromium chromium-driver"
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1400,1000")  # fmt: skip


def artifacts_dir() -> Path:
    """Where screenshots go: $RBENCH_ARTIFACTS or tests/browser/artifacts/ (gitignored)."""
    env = os.environ.get("RBENCH_ARTIFACTS")
    path = Path(env) if env else Path(__file__).resolve().parent / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


class Site:
    """The served app: ``url(path)``, plus the workspace and run ids behind it and
    the server's token (``login_url``: the address that sets the token's cookie, as
    the one ``rbench serve`` prints; docs/architecture.md#web-ui-security)."""

    def __init__(self, base: str, ws: Workspace, both: str, bm25: str, token: str = "") -> None:
        self.base, self.ws, self.run_both, self.run_bm25 = base, ws, both, bm25
        self.token = token

    def url(self, path: str) -> str:
        return self.base + path

    def login_url(self, path: str) -> str:
        """``path`` with ``?token=``: the server sets the cookie and redirects to ``path``."""
        return f"{self.base}{path}?token={self.token}"


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serves ``app`` with uvicorn on a free 127.0.0.1 port in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):  # bounded wait for startup
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from retrieval_bench.web.app import create_app

    tmp = tmp_path_factory.mktemp("browser")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
        ws = Workspace(tmp / "home")
        exact = {"name": "exact", "terms": "identifiers"}
        both = _benchmark(ws, tmp, "bm25-exact", [{"name": "bm25"}, exact])
        bm25 = _benchmark(ws, tmp, "bm25-only", [{"name": "bm25"}])
        llm = oracle_llm(ws)
        app = create_app(ws, llm=lambda: llm)
        with serve(app) as base:
            yield Site(base, ws, both, bm25, app.state.guard.token)


@pytest.fixture(scope="session")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A workspace whose results database was overwritten with bytes that are not SQLite."""
    from retrieval_bench.store.db import ResultsDB
    from retrieval_bench.web.app import create_app

    ws = Workspace(tmp_path_factory.mktemp("broken") / "home")
    with ResultsDB(ws.db_path) as db:
        rid = db.start_run("ok", config={"table_k": 5})
        db.finish_run(rid, "done")
    ws.db_path.write_bytes(b"not a database " * 200)
    with serve(create_app(ws)) as base:
        yield Site(base, ws, rid, rid)


@pytest.fixture(scope="session")
def driver() -> Iterator[Any]:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail(f"browser tests need {CHROMIUM} and {CHROMEDRIVER}; {INSTALL_HINT}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    drv.set_page_load_timeout(30)
    try:
        yield drv
    finally:
        drv.quit()

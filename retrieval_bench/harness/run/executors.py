"""Where the per-snapshot work of a run executes (docs/configuration.md#executor).

* :class:`SerialExecutor` — this process, one task after another (the default).
* :class:`ProcessExecutor` — a local pool of ``jobs`` worker processes
  (``concurrent.futures`` with the ``spawn`` start method: no forked copies of
  the model or LanceDB threads).
* :class:`RayExecutor` — one Ray task per snapshot group. Without an address it
  starts a local Ray cluster for the run (``num_cpus=jobs``) and stops it after;
  ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT`` join a running cluster, whose
  workers must have the same ``retrieval-bench`` installed and see the
  workspace's caches (README: "Running on a Ray cluster").

Every executor yields ``(task index, result)`` as tasks finish; the caller
merges the results in task order, so the stored results do not depend on the
executor (tested: identical TREC files). The tasks share the on-disk caches
(chunks, embeddings, snapshots), which are safe for concurrent writers.

A run that stops early (an error, Ctrl-C, SIGTERM: the CLI turns SIGTERM into
:class:`KeyboardInterrupt`) leaves its ``with executor:`` block by an exception,
and :meth:`Executor.abort` then stops the work at once instead of waiting for
the running tasks: the pool's workers are terminated, Ray tasks cancelled with
``force=True``. Pool workers also ignore SIGINT (the parent handles Ctrl-C for
them) and, on Linux, ask the kernel to kill them when the parent dies
(``PR_SET_PDEATHSIG``), so not even ``kill -9`` of the parent leaves them running
(docs/architecture.md#executors).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import socket
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from retrieval_bench.config import ExecutorSpec
from retrieval_bench.errors import ConfigError, RBenchError

T = TypeVar("T")
R = TypeVar("R")

FORWARDED_ENV_PREFIXES = ("RBENCH_", "HF_", "TOKENIZERS_", "OMP_", "MKL_")
"""Environment variables a Ray worker is given (a cluster started elsewhere does not
inherit this process's environment)."""
_CONNECT_TIMEOUT_S = 5.0


class ExecutorError(RBenchError):
    """An executor lost a worker mid-run (a bad address or a missing Ray is a
    :class:`ConfigError`, raised before the run starts)."""


class Executor(ABC):
    """Runs a picklable function over tasks, yielding ``(index, result)`` as each finishes."""

    name = "serial"
    workers = 1
    startup_seconds = 0.0
    """Time spent starting the workers or the cluster (0 for the serial executor)."""

    @abstractmethod
    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T]
    ) -> Iterator[tuple[int, R]]: ...

    def close(self) -> None:  # noqa: B027 - most executors start nothing
        """Stop what this executor started, after the running tasks finish."""

    def abort(self) -> None:
        """Stop what this executor started now, dropping the running tasks (the
        run stopped early; its finished tasks are already checkpointed)."""
        self.close()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers, "startup_s": self.startup_seconds}

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:  # an error, Ctrl-C or SIGTERM: do not wait for the running tasks
            self.abort()


class SerialExecutor(Executor):
    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        for i, item in enumerate(items):
            yield i, fn(item)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_ABORT_WAIT_S = 5.0
_POLL_S = 0.5
"""How often a waiting parent wakes to run signal handlers (Ctrl-C, SIGTERM)."""


def _die_with_parent(parent: int) -> None:
    """Initializer of a pool worker: leave Ctrl-C to the parent (which stops the
    pool) and, on Linux, be killed by the kernel when the parent dies, however it
    dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); a parent already gone ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


class ProcessExecutor(Executor):
    """A local process pool; workers start on the first task (``spawn``) and die
    with the parent (:func:`_die_with_parent`)."""

    name = "processes"

    def __init__(self, jobs: int) -> None:
        self.workers = jobs
        t0 = time.perf_counter()
        context = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        )
        self.startup_seconds = time.perf_counter() - t0

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        pending: dict[Future[R], int] = {
            self._pool.submit(fn, item): i for i, item in enumerate(items)
        }
        try:
            while pending:
                # a bounded wait, again and again: the main thread returns to Python
                # every _POLL_S, so a Ctrl-C/SIGTERM handler runs promptly even when
                # the kernel delivered the signal to another thread of the process
                done, _ = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
                for fut in done:
                    index = pending.pop(fut)
                    try:
                        yield index, fut.result()
                    except BrokenProcessPool as exc:
                        raise ExecutorError(
                            f"a worker process died (killed or out of memory) while running "
                            f"task {index + 1} of {len(items)}: try fewer --jobs"
                        ) from exc
        finally:
            for fut in pending:
                fut.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        """Terminate the workers (SIGTERM, then SIGKILL after a few seconds) and
        reap them; what Python 3.14's ``terminate_workers`` does."""
        workers = list((getattr(self._pool, "_processes", None) or {}).values())
        manager = getattr(self._pool, "_executor_manager_thread", None)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            with contextlib.suppress(ProcessLookupError, ValueError):
                proc.terminate()
        deadline = time.monotonic() + _ABORT_WAIT_S
        for proc in workers:
            with contextlib.suppress(ValueError):
                proc.join(max(0.0, deadline - time.monotonic()))
                if proc.is_alive():
                    proc.kill()
                    proc.join(1.0)
        if manager is not None:  # it sees the workers gone and releases the pool's queues
            manager.join(max(0.0, deadline - time.monotonic()))


def _check_reachable(address: str) -> None:
    """One line, at once, when ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) does
    not answer — instead of Ray's own retries for a minute or more."""
    parts = urlsplit(address if "://" in address else f"//{address}")
    host, port = parts.hostname, parts.port
    if not host or port is None:
        raise ConfigError(
            f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT or auto: "
            "fix executor.address"
        )
    try:
        with socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"Ray address {address} does not answer ({why}): start the cluster "
            "(ray start --head) or fix executor.address; leave it out to start a local one"
        ) from None


class RayExecutor(Executor):
    """Ray tasks, one per snapshot group, on a local or a running cluster."""

    name = "ray"

    def __init__(self, jobs: int | None, address: str | None) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the ray executor needs Ray: pip install 'retrieval-bench[ray]'"
            ) from None
        self._ray = ray
        if address not in (None, "auto"):
            _check_reachable(address)
        os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # quiet, as Ray 3 will be
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIXES)}
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "configure_logging": False,
            "runtime_env": {"env_vars": env},
        }
        if address is None:
            kwargs["num_cpus"] = jobs or os.cpu_count() or 1
        else:
            kwargs["address"] = address
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            where = "a local cluster" if address is None else f"the cluster at {address}"
            raise ConfigError(f"Ray could not start or join {where}: {first}") from None
        self._started_here = address is None
        self.address = address or "local"
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self.startup_seconds = time.perf_counter() - t0
        self._pending: dict[Any, int] = {}

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        ray = self._ray
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        pending = {remote.remote(item): i for i, item in enumerate(items)}
        self._pending = pending  # what abort() cancels
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                for ref in ready:
                    index = pending.pop(ref)
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        raise exc.as_instanceof_cause() from None
                    except ray.exceptions.RayError as exc:
                        raise ExecutorError(
                            f"Ray lost task {index + 1} of {len(items)}: {type(exc).__name__}: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                        ) from None
                    yield index, value
        finally:
            self._cancel()

    def _cancel(self) -> None:
        """Cancel the tasks not yet collected, killing their workers (``force=True``)."""
        for ref in list(self._pending):
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)
        self._pending = {}

    def abort(self) -> None:
        self._cancel()
        self.close()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "address": self.address}

    def close(self) -> None:
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(spec: ExecutorSpec) -> Executor:
    """The executor ``spec`` names, started (a Ray cluster: joined or started now)."""
    if spec.name == "ray":
        return RayExecutor(spec.jobs, spec.address)
    jobs = spec.jobs or (os.cpu_count() or 1 if spec.name == "processes" else 1)
    if spec.name == "processes" and jobs > 1:
        return ProcessExecutor(jobs)
    return SerialExecutor()

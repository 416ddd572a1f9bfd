"""Real signals to a ``rbench run --jobs 2`` whose workers are busy: SIGTERM and
SIGINT stop the pool (its workers die with the parent), mark the run
``interrupted`` and end the parent promptly; even ``kill -9`` of the parent
leaves no worker behind (``PR_SET_PDEATHSIG``; docs/architecture.md#executors).

The work is made long without timing anything: the ``exact`` stage is given a
ripgrep (``rg_path``) that runs the real one for the first snapshot (which a
pool runs alone, to warm the caches) and, for the questions of the others,
records its pid and sleeps, so each worker blocks in a snapshot until it is
stopped. The test waits until both workers are in that call, then signals the
parent. Bounds (60 s) are only there so that a hang fails instead of blocking
the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.retrieval.exact import find_rg
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import REPO_ROOT
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = [
    needs_git,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

BOUND_S = 60.0
"""How long a process may take to go away before the test fails (not a timing claim)."""


def _state(pid: int) -> str | None:
    """The process's state letter (``R``, ``S``, ``Z``...), None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def _workers(parent: int) -> list[int]:
    """The pool workers (``multiprocessing`` spawn children) of ``parent``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in cmd:
            found.append(int(entry.name))
    return sorted(found)


def _until(check: Any, what: str, run: dict[str, Any] | None = None) -> Any:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if run is not None and run["proc"].poll() is not None:
            err = run["stderr"].read_text()
            pytest.fail(f"rbench ended ({run['proc'].returncode}) before {what}: {err}")
        time.sleep(0.1)
    pytest.fail(f"not within {BOUND_S:.0f}s: {what}")


@pytest.fixture
def slow_run(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A config of 4 questions at 4 commits (4 snapshots) whose ``exact`` stage
    blocks after the first snapshot; yields the paths, and at the end kills the
    sleeping "ripgreps"."""
    repo = GitRepo(tmp_path / "proj")
    rows = []
    for i in range(4):
        name = "handler" if i == 0 else "sleepy"  # the first snapshot's question runs rg
        sha = repo.commit(f"c{i}", {f"pkg/mod{i}.py": f"def {name}_{i}(x):\n    return x\n"})
        rows.append({"id": f"q{i}", "query": f"{name}_{i}", "gold_files": [f"pkg/mod{i}.py"],
                     "commit": sha})  # fmt: skip
    bundle = tmp_path / "proj.bundle"
    repo.git("bundle", "create", str(bundle), "--all")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pids = tmp_path / "rg-pids"
    pids.mkdir()
    rg = tmp_path / "slow-rg"
    rg.write_text(
        f'#!/bin/sh\ncase "$*" in *sleepy_*) touch "{pids}/$$"; exec sleep 3600;; esac\n'
        f'exec "{find_rg()}" "$@"\n'
    )
    rg.chmod(0o755)
    cfg = {
        "name": "slow",
        "datasets": [{"name": "proj", "questions": str(questions), "repo": "org/proj"}],
        "repos": {"org/proj": str(bundle)},
        "retrievers": [{"name": "bm25"},
                       {"name": "exact", "rg_path": str(rg), "timeout_s": 3600}],
        "candidates": 5,
    }  # fmt: skip
    config = tmp_path / "slow.json"
    config.write_text(json.dumps(cfg))
    run: dict[str, Any] = {
        "config": config, "home": tmp_path / "home", "pids": pids, "tmp": tmp_path,
        "stderr": tmp_path / "stderr.txt", "workers": [],
    }  # fmt: skip
    try:
        yield run
    finally:  # whatever a failing test left: the run, its workers, the sleepers
        pids_left = [int(e.name) for e in pids.iterdir()] + run["workers"]
        if "proc" in run:
            pids_left.append(run["proc"].pid)
        for pid in pids_left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if "proc" in run:
            run["proc"].wait()


def _start(run: dict[str, Any]) -> tuple[subprocess.Popen[str], list[int]]:
    """``rbench run --jobs 2`` started, once both workers are blocked in the stage.
    Its stderr goes to a file: orphaned workers would hold a pipe open forever."""
    # PYTHONFAULTHANDLER: a hung parent prints every thread's stack on SIGABRT (_hung)
    env = {**os.environ, "RBENCH_CACHE": str(run["tmp"] / "cache"), "PYTHONFAULTHANDLER": "1"}
    env.pop("RBENCH_HOME", None)
    with run["stderr"].open("w") as stderr:
        run["proc"] = proc = subprocess.Popen(
            [sys.executable, "-c", _DEFAULT_SIGINT_THEN_RBENCH, "--workspace", str(run["home"]),
             "run", str(run["config"]), "--jobs", "2"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        )  # fmt: skip
    run["workers"] = workers = _until(
        lambda: len(_workers(proc.pid)) == 2 and _workers(proc.pid), "two pool workers exist", run
    )
    _until(lambda: len(list(run["pids"].iterdir())) >= 2, "both workers are in a task", run)
    return proc, workers


_DEFAULT_SIGINT_THEN_RBENCH = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'retrieval_bench.cli', *sys.argv[1:]])\n"
)
"""``rbench`` (same pid, via exec) with SIGINT back to its default: a pytest started
as a background job of a non-interactive shell ignores SIGINT, its children inherit
that, and Python then never raises KeyboardInterrupt (as the shell intended)."""


def _hung(run: dict[str, Any]) -> str:
    """The stacks of a parent that did not exit (faulthandler's dump on SIGABRT)."""
    run["proc"].send_signal(signal.SIGABRT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        run["proc"].wait(timeout=10)
    return str(run["stderr"].read_text()[-6000:])


def _stored_run(home: Path) -> Any:
    (run,) = ResultsDB(Workspace(home).db_path).list_runs()
    return run


@pytest.mark.parametrize(
    ("sig", "code", "reason"),
    [(signal.SIGTERM, 143, "interrupted (SIGTERM)"), (signal.SIGINT, 130, "interrupted (Ctrl-C)")],
    ids=["SIGTERM", "SIGINT"],
)
def test_signal_stops_the_pool_and_marks_the_run_interrupted(
    slow_run: dict[str, Any], sig: signal.Signals, code: int, reason: str
) -> None:
    proc, workers = _start(slow_run)
    proc.send_signal(sig)  # to the parent alone, as `kill -TERM PID` does
    try:
        returncode = proc.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"rbench did not exit within {BOUND_S:.0f}s of {sig.name}: {_hung(slow_run)}")
    stderr = slow_run["stderr"].read_text()
    assert returncode == code, stderr
    assert "stored results are intact" in stderr
    _until(lambda: not any(_alive(w) for w in workers), f"workers {workers} are gone")
    run = _stored_run(slow_run["home"])
    assert (run.status, run.error) == ("interrupted", reason)


def test_workers_die_with_a_killed_parent(slow_run: dict[str, Any]) -> None:
    proc, workers = _start(slow_run)
    proc.kill()  # SIGKILL: no handler runs; the kernel ends the workers (PDEATHSIG)
    proc.wait(timeout=BOUND_S)
    _until(lambda: not any(_alive(w) for w in workers), f"workers {workers} are gone")

"""A closed stdout pipe (``rbench runs | head -1``): every command stops quietly,
exit 141 (as a program SIGPIPE ended), no ``BrokenPipeError`` traceback
(issue 19 item 14). Real subprocesses whose stdout is a pipe with no reader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_CLOSED_PIPE
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import REPO_ROOT

pytestmark = pytest.mark.integration


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    """``rbench ARGS`` writing into a pipe whose read end is closed before it starts:
    its first write to stdout fails, whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "retrieval_bench.cli", *args],
            cwd=REPO_ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "command", [["runs"], ["runs", "--json"], ["sweeps", "--json"]], ids=" ".join
)
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path, command: list[str]) -> None:
    ws = Workspace(tmp_path / "ws")
    db = ResultsDB(ws.db_path)  # two stored runs for `rbench runs` to list
    for name in ("first", "second"):
        db.finish_run(db.start_run(name, config={"name": name}), "done")
    proc = _with_closed_stdout("--workspace", str(ws.root), *command)
    assert (proc.returncode, proc.stderr) == (EXIT_CLOSED_PIPE, "")


def test_help_into_a_closed_pipe_is_quiet() -> None:
    proc = _with_closed_stdout("--help")
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr
    assert proc.returncode in (EXIT_CLOSED_PIPE, 0)

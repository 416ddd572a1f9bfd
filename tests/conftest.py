"""Suite-wide hygiene: no local model server may outlive the test session.

Servers are started detached (their own session), so a test that lets the
toolkit auto-start one in a temporary workspace and never stops it would leave
a llama.cpp process behind after pytest exits. This guard lists the
``llama_cpp.server`` processes of this interpreter's environment when the
session starts, and at the end terminates the ones that appeared since,
naming them in the terminal summary so the leak is visible, not silent.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_LEAKED: list[str] = []


def _servers() -> dict[int, str]:
    """pid → command line of this environment's llama.cpp servers (Linux /proc)."""
    prefix = sys.prefix
    found: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "llama_cpp.server" in cmd and cmd.startswith(prefix):
            found[int(entry.name)] = cmd
    return found


@pytest.fixture(scope="session", autouse=True)
def no_leaked_model_servers() -> Iterator[None]:
    before = set(_servers())
    yield
    for pid, cmd in _servers().items():
        if pid in before:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue
        _LEAKED.append(f"pid {pid}: {cmd[:160]}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _LEAKED:
        terminalreporter.write_line(
            f"stopped {len(_LEAKED)} local model server(s) left running by tests:", yellow=True
        )
        for line in _LEAKED:
            terminalreporter.write_line(f"  {line}")

"""Suite-wide hygiene: no local model server may outlive the test session.

Servers are started detached (their own session), so a test that lets the
toolkit auto-start one in a temporary workspace and never stops it would leave
a llama.cpp process behind after pytest exits. (A run stops a server it started
on demand when it ends, and the ``llm_server`` fixture stops its own, so none
should be left.) This guard marks the session's environment with a token that
every process it starts inherits, and at the end terminates the
``llama_cpp.server`` processes carrying it — only this session's, never those
of another test session or of the user on the same machine — naming them in
the terminal summary so the leak is visible, not silent.

It also registers the ``needs_data_root`` marker and the ``data_root`` fixture of the
tests that read the benchmark data, which a user's clone lacks: they skip, saying
where the data root is and how to point at one, when it is absent
(:mod:`tests.benchmark_data`).
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmark_data import missing_data, skip_without_data

_LEAKED: list[str] = []
_TOKEN_VAR = "RBENCH_TEST_SESSION"
"""Set to a token of this session; the servers it starts inherit it."""


def _servers(token: str) -> dict[int, str]:
    """pid → command line of the llama.cpp servers started under ``token`` (Linux /proc)."""
    marker = f"{_TOKEN_VAR}={token}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "llama_cpp.server" not in cmd:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            found[int(entry.name)] = cmd
    return found


@pytest.fixture(scope="session", autouse=True)
def no_leaked_model_servers() -> Iterator[None]:
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    os.environ[_TOKEN_VAR] = token  # inherited by every server this session starts
    yield
    for pid, cmd in _servers(token).items():
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_data_root(*paths): reads the benchmark data (paths: files under the data "
        "root); skipped where the data root, or one of the paths, is absent",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each ``needs_data_root`` test whose data is absent skipped, with the reason
    (reported at the test, and none of its fixtures run)."""
    for item in items:
        for mark in item.iter_markers("needs_data_root"):
            reason = missing_data(*mark.args)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture
def data_root() -> Path:
    """The benchmark data root (``$RBENCH_DATA_ROOT``, else ``../shared/data`` beside the
    repository), as the bundled configs read it; the test skips where it is absent."""
    return skip_without_data()

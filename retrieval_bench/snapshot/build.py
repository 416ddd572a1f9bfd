"""Building entries of the snapshot cache (docs/architecture.md#caches).

* :func:`run_command`: a command without prompts whose failure is a one-line
  :class:`SnapshotError` (what failed, git's first ``fatal:``/``error:`` line or
  pip's last stderr line, what to do).
* :func:`build_aside`: a folder built in a temporary folder beside its place and
  renamed into it, so an interrupted build never leaves a half entry to reuse.
* :func:`locked`: an advisory lock on a folder, held while a process clones or
  fetches into the cache (POSIX ``flock``; elsewhere nothing is serialised).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from retrieval_bench.errors import SnapshotError

try:
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

_TIMEOUT_S = 900


def snapshot_error(label: str, problem: str, todo: str) -> SnapshotError:
    """``<problem> (from '<label>'): <todo>``."""
    return SnapshotError(f"{problem} (from {label!r}): {todo}")


_GIT_PREFIXES = ("fatal: ", "error: ")


def _last_line(text: str, git: bool = False) -> str:
    """What a failed command said, on one line: for ``git``, its first ``fatal:`` or
    ``error:`` line without the prefix (git follows it with advice such as "Please
    make sure you have the correct access rights / and the repository exists.", which
    says nothing of what failed); otherwise, or when there is none, the last non-empty
    line (pip's ``ERROR: ...``)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines if git else ():
        if line.startswith(_GIT_PREFIXES):
            return line.split(": ", 1)[1].strip() or line
    return lines[-1] if lines else "no error output"


def run_command(
    label: str, cmd: list[str], what: str, todo: str
) -> subprocess.CompletedProcess[str]:
    """Run a command without prompting; raise ``what failed: <why> (from 'label'): todo``
    (``why``: :func:`_last_line` of its stderr)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, errors="replace", timeout=_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise snapshot_error(label, f"{what} timed out after {_TIMEOUT_S}s", todo) from exc
    if proc.returncode != 0:
        why = _last_line(proc.stderr, git=cmd[0] == "git")
        raise snapshot_error(label, f"{what} failed: {why}", todo)
    return proc


def build_aside(dest: Path, build: Callable[[Path], object]) -> None:
    """``build`` a new folder in a temp dir beside ``dest``, then rename it to ``dest``.

    If another process finished the same ``dest`` first, theirs is kept.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{dest.name}-", dir=dest.parent))
    try:
        build(tmp / "new")
        try:
            os.rename(tmp / "new", dest)
        except OSError:
            if not dest.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on the existing ``folder`` (other processes
    taking it wait); released when the block ends."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

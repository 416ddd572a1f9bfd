"""What every ``rbench`` command shares: exit codes, the workspace, progress.

Exit codes: 0 success; 1 a run or command failed (or a gate tripped); 2 bad
usage, config or input (the one-line message says which input and what to do);
141 stdout's reader went away (the command stopped quietly).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from retrieval_bench.progress import ProgressReporter
from retrieval_bench.workspace import Workspace

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_CLOSED_PIPE = 141
"""Stdout's reader went away (``rbench runs | head -1``): the shell's code of a
program that SIGPIPE ended (128 + 13), as ``git log | head -1`` gives."""


def workspace(args: argparse.Namespace) -> Workspace:
    """``--workspace DIR``, else ``$RBENCH_HOME`` or ``./.rbench``."""
    return Workspace(Path(args.workspace).resolve()) if args.workspace else Workspace.default()


def command_line(
    args: argparse.Namespace,
    command: str,
    positionals: Sequence[str],
    options: Sequence[str],
    switches: Sequence[str] = (),
) -> str:
    """The ``rbench`` command line that repeats a fitting command, for the file it writes
    (how to rebuild it): ``positionals``, each of ``options`` with its value, defaults
    included so that a later change of a default cannot change what it rebuilds (a list
    value repeats its flag; a None value leaves it out), each of ``switches`` that is
    set, then ``--out``."""
    parts = ["rbench", command, *positionals]
    for name in options:
        value = getattr(args, name)
        for item in value if isinstance(value, list) else [] if value is None else [value]:
            parts += [f"--{name.replace('_', '-')}", str(item)]
    parts += [f"--{name.replace('_', '-')}" for name in switches if getattr(args, name)]
    return shlex.join([*parts, "--out", args.out])


def reporter(enabled: bool = True) -> ProgressReporter:
    """Progress on stderr: bars with counts and ETA on a terminal, else a plain line
    every few seconds (``$RBENCH_PROGRESS_INTERVAL``); nothing when not ``enabled``."""
    return ProgressReporter(sys.stderr, enabled=enabled)


def loads_line(loads: dict[str, float]) -> str | None:
    """``model loading (not in the stage seconds): embedding model 5.2s``, or None."""
    if not loads:
        return None
    listed = ", ".join(f"{name} {sec:.1f}s" for name, sec in sorted(loads.items()))
    return f"model loading (not in the stage seconds): {listed}"

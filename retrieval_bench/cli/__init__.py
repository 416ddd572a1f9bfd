"""rbench: measure and tune retrieval over codebases, stage by stage.

The command line (``rbench = retrieval_bench.cli:main``): the parser is
:mod:`~retrieval_bench.cli.parser`, each command area its own module (``run``,
``index`` and ``query``, ``runs`` and ``show``, ``compare``, ``eval``,
``prompts``, ``llm``, ``dataset``, ``serve``), shared helpers in
:mod:`~retrieval_bench.cli.common`. Library code never imports this package.

Exit codes: 0 success; 1 a run or command failed; 2 bad usage, config or
input (the one-line message says which input and what to do); 130 interrupted
(Ctrl-C); 143 terminated (SIGTERM, handled like Ctrl-C: :mod:`.signals`); 141
the reader of stdout went away (``rbench runs | head -1``): the
command stops quietly, as a program killed by SIGPIPE would (128 + 13).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from retrieval_bench.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_CLOSED_PIPE,
    EXIT_FAILED,
    EXIT_OK,
)
from retrieval_bench.cli.parser import build_parser
from retrieval_bench.cli.signals import EXIT_TERMINATED, Terminated, sigterm_as_interrupt
from retrieval_bench.errors import ConfigError, DatasetError, RBenchError, SnapshotError
from retrieval_bench.store.db import CorruptDBError, RunInProgressError, UnknownRunError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_OK",
    "build_parser",
    "console",
    "main",
]


def console() -> NoReturn:
    """The ``rbench`` command: :func:`main`, then the process ends at once.

    A run leaves millions of small objects in its process memos (chunks, term
    counts, token counts, facts); the interpreter's own exit frees them one by one
    and its modules after them, about a second and a half after a warm run's last
    line, for memory the system takes back anyway. So once the command has
    returned, the exit handlers have run (worker pools, Ray, cache flushes) and
    standard streams and logs are flushed, the process exits without that
    teardown. :func:`main` itself returns normally (tests and ``api`` callers)."""
    code = main()
    for thread in threading.enumerate():  # as the interpreter's exit: non-daemon threads end
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or its reader gone
            stream.flush()
    logging.shutdown()
    atexit._run_exitfuncs()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line), run the command, return its exit code.

    Every command, ``--help`` included, ends quietly with :data:`EXIT_CLOSED_PIPE`
    when the reader of its stdout has gone (``rbench runs | head -1``)."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except BrokenPipeError:
        return _closed_pipe()


def _run(argv: Sequence[str] | None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        with sigterm_as_interrupt():  # SIGTERM unwinds like Ctrl-C: runs marked, pools stopped
            code: int = args.func(args)
        return code
    except (
        ConfigError, DatasetError, SnapshotError, UnknownRunError, CorruptDBError,
        RunInProgressError,
    ) as exc:  # fmt: skip
        print(f"rbench: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RBenchError as exc:
        print(f"rbench: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Terminated:
        print("rbench: terminated (SIGTERM); stored results are intact", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("rbench: interrupted; stored results are intact", file=sys.stderr)
        return 130


def _closed_pipe() -> int:
    """Stdout's reader is gone: send whatever is still buffered for stdout to
    /dev/null (so the interpreter's final flush cannot fail again and print a
    traceback) and exit quietly (the recipe of the Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor (tests' captures)
        pass
    return EXIT_CLOSED_PIPE

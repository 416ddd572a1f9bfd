"""SIGTERM handled like Ctrl-C while a command runs (docs/architecture.md#executors).

Python ends a process on SIGTERM at once, without unwinding: a run would stay
``running`` in the results database, a process pool's workers would be
orphaned at full CPU and a model server the run started would stay up. While a
command runs, :func:`sigterm_as_interrupt` turns the first SIGTERM into
:class:`Terminated` — a :class:`KeyboardInterrupt`, so every path that handles
Ctrl-C (the run marked ``interrupted``, the pool stopped, the on-demand server
stopped) handles it too — and a second SIGTERM ends the process at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType

EXIT_TERMINATED = 128 + signal.SIGTERM
"""The shell's code of a program that SIGTERM ended (143)."""


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (``str()`` is ``SIGTERM``: a stored run's error
    reads ``interrupted (SIGTERM)``)."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM: no more cleanup
    raise Terminated("SIGTERM")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread
    (elsewhere, where Python cannot install handlers, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


EXIT_GRACE_S = 10.0
"""How long an interrupted command's process may take to end after its cleanup."""


def end_process_soon(code: int, grace_s: float = EXIT_GRACE_S) -> None:
    """After an interrupted command has cleaned up (run marked, pool stopped, server
    released), make sure the process ends: a Ctrl-C that lands inside the standard
    library's process-pool bookkeeping can leave its manager thread blocked, and
    the interpreter joins that thread at exit forever. A daemon thread ends the
    process with ``code`` if it is still alive ``grace_s`` seconds later (a normal
    exit kills the daemon first). Only for the command-line process itself."""

    def _end() -> None:
        time.sleep(grace_s)
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)

    threading.Thread(target=_end, name="rbench-exit", daemon=True).start()

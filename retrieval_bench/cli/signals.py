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

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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

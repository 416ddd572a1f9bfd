"""Progress of long work, one way everywhere: counts, rate and ETA.

Long work (chunking and embedding an index, the stages of a benchmark run,
LLM calls, prompt evaluations) reports ``(label, done, total, unit)`` to a
:class:`Progress` — e.g. ``("index shopapi", 120, 480, "files")`` — and may
add one-line notes (``"[shopapi] bm25  0.4s"``). Library code only calls the
object it was given; what the user sees is decided by the reporter:

* :class:`ProgressReporter` — on a terminal, one tqdm bar per label with
  counts, rate and ETA; otherwise (a pipe, a CI log) a plain line on stderr
  at most every ``interval`` seconds per label, plus one when the label
  completes::

      index shopapi: 120/480 files (25%), eta 14s
      index shopapi: 480/480 files (100%), 3.1s

* :data:`SILENT` — discards everything (``--json`` output, tests).

Model loads (the embedding model, the local LLM server) happen deep inside
lazily built objects that hold no reporter; they announce themselves with
:func:`announce`, which goes to the reporter the command activated with
``with reporter:`` (none: nothing is printed).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TextIO

INTERVAL_ENV = "RBENCH_PROGRESS_INTERVAL"
"""Seconds between two plain progress lines of one label (default 5; 0 = every update)."""
DEFAULT_INTERVAL = 5.0


class Progress(Protocol):
    """Where long work reports how far it is."""

    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        """``done`` of ``total`` units of the work named ``label`` are finished."""
        ...

    def note(self, message: str) -> None:
        """A one-line message between progress updates (a stage finished, a model loads)."""
        ...


class _Silent:
    """A :class:`Progress` that shows nothing."""

    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        return None

    def note(self, message: str) -> None:
        return None


SILENT: Progress = _Silent()


class Callback:
    """A :class:`Progress` over plain functions: ``update(label, done, total, unit)``
    and, optionally, ``on_note(message)`` (for API callers that keep their own display)."""

    def __init__(
        self,
        update: Callable[[str, int, int, str], None],
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self._update = update
        self._note = on_note

    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        self._update(label, done, total, unit)

    def note(self, message: str) -> None:
        if self._note is not None:
            self._note(message)


def format_duration(seconds: float) -> str:
    """``14s``, ``3m05s``, ``1h02m``: short enough for a progress line."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_line(
    label: str, done: int, total: int, unit: str, elapsed: float, eta: float | None = None
) -> str:
    """The plain (non-terminal) line: counts, percentage, then the ETA (default:
    from the mean rate so far), or the time taken once ``done`` reaches ``total``."""
    unit_part = f" {unit}" if unit else ""
    if total <= 0:
        return f"{label}: {done}{unit_part}"
    line = f"{label}: {done}/{total}{unit_part} ({100 * done // total}%)"
    if done >= total:
        return f"{line}, {elapsed:.1f}s"
    if eta is None and done > 0 and elapsed > 0:
        eta = elapsed / done * (total - done)
    return line if eta is None else f"{line}, eta {format_duration(eta)}"


@dataclass
class _Track:
    """One label's state: when it started, when it last printed, its unit and bar."""

    started: float
    unit: str
    total: int
    printed: float = float("-inf")
    bar: Any = None
    first: tuple[float, int] | None = None
    """(time, done) of the first update past 0: the ETA's rate is measured from
    there, so a slow first step (a model loading) does not inflate it."""

    def eta(self, now: float, done: int) -> float | None:
        if self.first is None or done <= self.first[1] or now <= self.first[0]:
            return None
        rate = (done - self.first[1]) / (now - self.first[0])
        return (self.total - done) / rate


def _default_interval() -> float:
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_INTERVAL
    except ValueError:
        return DEFAULT_INTERVAL


class ProgressReporter:
    """Shows progress on ``stream`` (default stderr): tqdm bars on a terminal,
    throttled plain lines otherwise.

    ``tty`` forces one mode (default: ``stream.isatty()``); ``interval`` is the
    least number of seconds between two plain lines of one label (default
    ``$RBENCH_PROGRESS_INTERVAL`` or 5). A label's first update and its
    completion are always printed. ``enabled=False`` shows nothing (``--json``).
    Thread-safe (LLM calls finish on worker threads). Used as a context manager
    it is the *active* reporter that :func:`announce` writes to, and closes its
    bars on exit.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tty: bool | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self.tty = tty
        self.interval = _default_interval() if interval is None else max(0.0, interval)
        self._clock = clock
        self._tracks: dict[str, _Track] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------- Progress
    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            track = self._tracks.get(label)
            if track is None or track.unit != unit:  # new work under this label
                if track is not None and track.bar is not None:
                    track.bar.close()
                track = self._tracks[label] = _Track(now, unit, total)
            track.total = total
            if self.tty:
                self._draw(label, track, done, total, unit)
            else:
                finished = total > 0 and done >= total
                first = track.printed == float("-inf")
                if total > 0 and (first or finished or now - track.printed >= self.interval):
                    eta = track.eta(now, done)
                    self._write(progress_line(label, done, total, unit, now - track.started, eta))
                    track.printed = now
            if track.first is None and done > 0:
                track.first = (now, done)
            if total > 0 and done >= total:
                del self._tracks[label]

    def note(self, message: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self.tty:
                from tqdm import tqdm

                tqdm.write(message, file=self.stream)
            else:
                self._write(message)

    # -------------------------------------------------------------- drawing
    def _draw(self, label: str, track: _Track, done: int, total: int, unit: str) -> None:
        if total <= 0:
            return
        if track.bar is None:
            from tqdm import tqdm

            track.bar = tqdm(
                total=total, desc=label, unit=f" {unit}" if unit else "it",
                file=self.stream, leave=False, mininterval=min(0.2, self.interval),
                dynamic_ncols=True,
            )  # fmt: skip
        bar = track.bar
        if bar.total != total:
            bar.total = total
        step = min(done, total) - bar.n
        if step > 0:
            bar.update(step)  # redraws at most every mininterval
        elif step < 0:
            bar.n = min(done, total)
            bar.refresh()
        if done >= total:
            bar.close()
            track.bar = None

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe must not fail the work
            pass

    def close(self) -> None:
        """Close any bar still open (work that stopped before completing)."""
        with self._lock:
            for track in self._tracks.values():
                if track.bar is not None:
                    track.bar.close()
            self._tracks.clear()

    # --------------------------------------------------------- activation
    def __enter__(self) -> ProgressReporter:
        with _ACTIVE_LOCK:
            _ACTIVE.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with _ACTIVE_LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
        self.close()


_ACTIVE: list[Progress] = []
_ACTIVE_LOCK = threading.Lock()


def announce(message: str) -> None:
    """A note to the active reporter (see :class:`ProgressReporter`), if there is one."""
    with _ACTIVE_LOCK:
        active = _ACTIVE[-1] if _ACTIVE else None
    if active is not None:
        active.note(message)


def for_label(progress: Progress | None, label: str) -> Callable[[int, int, str], None]:
    """A ``(done, total, unit)`` callback that reports to ``progress`` under ``label``
    (for code such as the index build that knows its counts, not its name)."""
    target = progress or SILENT

    def report(done: int, total: int, unit: str) -> None:
        target(label, done, total, unit)

    return report

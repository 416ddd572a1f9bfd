"""Time spent loading models, kept apart from the work that happened to trigger it.

Models load lazily: the embedding model on the first text to embed, the local
LLM server on the first call. Whatever stage comes first would otherwise be
charged seconds of loading that have nothing to do with its own work (dense
retrieval looked seconds slower than bm25 only because it ran first). Each
load runs inside :func:`timed_load`, which records when it started and how
long it took; :func:`loads_since` gives the loads that started after a given
``time.perf_counter()`` value, so a stage (or the index build) subtracts them
from its own seconds and reports them on their own line.

Loads are process-wide (a loaded model is shared), so this record is too.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from retrieval_bench.progress import announce

_KEEP = 1000  # events remembered; loads are rare (each model loads once per process)


@dataclass(frozen=True)
class LoadEvent:
    name: str
    started: float
    """``time.perf_counter()`` when the load began."""
    seconds: float


_EVENTS: list[LoadEvent] = []
_LOCK = threading.Lock()


@contextlib.contextmanager
def timed_load(name: str) -> Iterator[None]:
    """Record the time the body takes as loading ``name``, and announce it (a long,
    silent load is what makes a command look stuck)."""
    announce(f"loading {name} ...")
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - started
        with _LOCK:
            _EVENTS.append(LoadEvent(name, started, seconds))
            del _EVENTS[:-_KEEP]
        announce(f"loaded {name} in {seconds:.1f}s")


def loads_since(t0: float) -> dict[str, float]:
    """Seconds per loaded thing, for the loads that began at or after ``t0``
    (a ``time.perf_counter()`` value)."""
    out: dict[str, float] = {}
    with _LOCK:
        for event in _EVENTS:
            if event.started >= t0:
                out[event.name] = out.get(event.name, 0.0) + event.seconds
    return out


def own_seconds(t0: float) -> tuple[float, dict[str, float]]:
    """Seconds since ``t0`` without the loads that began since, and those loads."""
    loads = loads_since(t0)
    return max(0.0, time.perf_counter() - t0 - sum(loads.values())), loads

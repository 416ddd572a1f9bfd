"""What the results database hands back and raises: run and stage records, run
statuses, run ids, failure reasons, and the errors of
:class:`retrieval_bench.store.db.ResultsDB` (which re-exports all of them).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from retrieval_bench.errors import RBenchError

__all__ = [
    "FINISHED_BADLY",
    "RUN_STATUSES",
    "ResultsDBError",
    "RunInProgressError",
    "RunRecord",
    "StageInfo",
    "UnknownRunError",
    "failure_reason",
    "new_run_id",
    "now",
]

RUN_STATUSES = ("running", "done", "failed", "interrupted")
FINISHED_BADLY = ("failed", "interrupted")
"""Statuses ``rbench runs --prune`` deletes."""


class ResultsDBError(RBenchError):
    """The results database cannot be opened or is asked for something it lacks."""


class RunInProgressError(ResultsDBError):
    """The run is still being written by a live process (or one this host cannot check)."""


class UnknownRunError(ResultsDBError, KeyError):
    """No run with that id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown run"


@dataclass(frozen=True)
class RunRecord:
    id: str
    name: str
    created_at: str
    finished_at: str | None
    status: str
    config: dict[str, Any]
    provenance: dict[str, Any]
    dataset_fingerprint: str | None
    timings: dict[str, Any]
    notes: str | None
    error: str | None = None
    """Why the run failed or was interrupted (one line); None when it did not."""
    owner: dict[str, Any] | None = None
    """The process that ran it: host, pid, process token (see ``store.owner``)."""


@dataclass(frozen=True)
class StageInfo:
    stage: str
    parent: str | None
    seconds: float
    llm_calls: int
    llm_tokens: int
    n_failures: int


def now() -> datetime:
    """The current time, UTC (what run ids and timestamps use)."""
    return datetime.now(UTC)


def new_run_id(when: datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-<6 hex>`` (UTC), sortable by creation time."""
    return f"{(when or now()):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def failure_reason(exc: BaseException) -> str:
    """One line for ``runs.error``: our own errors already explain themselves; any
    other exception is prefixed with its type (``KeyError: 'x'`` says more than ``'x'``)."""
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (str() names the signal)
        return f"interrupted ({str(exc) or 'Ctrl-C'})"
    text = " ".join(str(exc).split())
    if isinstance(exc, RBenchError) and text:
        return text
    if isinstance(exc, KeyError) and exc.args:
        text = repr(exc.args[0])
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

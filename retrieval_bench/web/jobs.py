"""Background jobs for the web UI: a prompt-evaluation run started from the page
runs in a thread; the page polls ``GET /api/jobs/{id}`` for its progress."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    id: str
    kind: str
    status: str = "running"
    """``running``, ``done`` or ``failed``."""
    progress: float = 0.0
    message: str = ""
    result: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "progress": self.progress,
            "message": self.message,
            "result": self.result,
        }


class JobRegistry:
    """In-memory jobs of one app (lost on restart; the run itself is stored)."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def start(self, kind: str, work: Callable[[Job], dict[str, Any]]) -> Job:
        job = Job(id=secrets.token_hex(6), kind=kind)
        with self._lock:
            self._jobs[job.id] = job

        def target() -> None:
            try:
                job.result = work(job)
                job.progress, job.status = 1.0, "done"
            except Exception as exc:  # the job reports any failure to the page
                job.status, job.message = "failed", f"{type(exc).__name__}: {exc}"

        threading.Thread(target=target, name=f"rbench-job-{job.id}", daemon=True).start()
        return job

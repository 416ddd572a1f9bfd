"""The ``executor:`` section of a benchmark config: where a run's snapshot groups
run (docs/configuration.md#executor).

A module below :mod:`retrieval_bench.config` (it imports nothing of the toolkit),
read by it and by :mod:`retrieval_bench.harness.run.executors`;
``retrieval_bench.config`` re-exports both names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EXECUTORS = ("serial", "processes", "ray")
"""Where the per-snapshot work of a run goes (docs/configuration.md#executor)."""


class ExecutorSpec(BaseModel):
    """The ``executor:`` section: where a dataset's snapshot groups run
    (docs/configuration.md#executor). Results do not depend on it, so it is left
    out of the config fingerprint and may change when a run is resumed."""

    model_config = ConfigDict(extra="forbid")
    name: Literal["serial", "processes", "ray"] = "serial"
    """``serial``: this process; ``processes``: a local process pool; ``ray``: Ray tasks."""
    jobs: int | None = Field(default=None, gt=0)
    """Workers (processes) or CPUs (a Ray cluster started here); default: the machine's cores."""
    address: str | None = None
    """Ray only: None starts a local cluster for the run; ``auto`` joins the one on this
    machine (``ray start --head``); ``HOST:PORT`` or ``ray://HOST:10001`` joins that one."""

    @model_validator(mode="after")
    def _address_only_for_ray(self) -> ExecutorSpec:
        if self.address is not None and self.name != "ray":
            raise ValueError(f"address is for the ray executor, not {self.name!r}")
        return self

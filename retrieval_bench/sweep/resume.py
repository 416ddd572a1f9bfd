"""Which stored sweep ``rbench sweep --resume`` continues (docs/sweeps.md#resume).

A sweep can be resumed when it was interrupted or failed and its base config
(without the executor) and ``sweep:`` section are the ones given now; the
snapshot tasks it finished are then read from their checkpoints.
"""

from __future__ import annotations

from typing import Any

from retrieval_bench.errors import ConfigError
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.sweeps import get_sweep, list_sweeps

RESUMABLE = ("interrupted", "failed")


def resumable_sweep(
    db: ResultsDB, name: str, config: dict[str, Any], sweep: dict[str, Any], wanted: str
) -> str:
    """The id of the sweep to resume: ``wanted``, or with ``last`` the newest
    interrupted or failed sweep of this config; :class:`ConfigError` when there is none,
    when it finished, or when its config or grid differ."""
    if wanted == "last":
        same = [
            s for s in list_sweeps(db)
            if s.name == name and s.status in RESUMABLE and s.config == config
            and s.sweep == sweep
        ]  # fmt: skip
        if not same:
            raise ConfigError(
                f"no interrupted or failed sweep of {name!r} with this config and grid to "
                "resume (see rbench sweeps); run it without --resume"
            )
        return same[0].id
    found = get_sweep(db, wanted)
    if found.status not in RESUMABLE:
        raise ConfigError(f"sweep {found.id} is {found.status}, not interrupted or failed")
    if found.config != config or found.sweep != sweep:
        what = "config" if found.config != config else "sweep: section"
        raise ConfigError(
            f"sweep {found.id} was made with another {what}; resume it with the same file"
        )
    return found.id

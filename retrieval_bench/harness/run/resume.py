"""Which stored run ``rbench run --resume`` continues (docs/architecture.md#executors).

A run can be resumed when it was interrupted or failed and its config — the
part that decides results, so not the executor — is the one given now; its
finished snapshot groups are then taken from their checkpoints
(:mod:`~retrieval_bench.harness.run.checkpoints`).
"""

from __future__ import annotations

from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.errors import ConfigError
from retrieval_bench.store.db import ResultsDB, RunRecord

RESUMABLE = ("interrupted", "failed")
LAST = "last"


def _results_part(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "executor"}


def _differences(stored: dict[str, Any], now: dict[str, Any]) -> list[str]:
    keys = sorted(set(stored) | set(now))
    return [k for k in keys if stored.get(k) != now.get(k)]


def resumable_run(db: ResultsDB, cfg: BenchmarkConfig, wanted: str) -> str:
    """The id of the run to resume: ``wanted``, or with ``last`` the newest interrupted
    or failed run of this config. Raises :class:`ConfigError` (one line) when there
    is none, when it finished, or when its config differs."""
    now = cfg.results_dump()
    if wanted == LAST:
        runs = [r for r in db.list_runs() if r.name == cfg.name and r.status in RESUMABLE]
        same = [r for r in runs if not _differences(_results_part(r.config), now)]
        if not same:
            hint = f"; {len(runs)} of its runs stopped early with another config" if runs else ""
            raise ConfigError(
                f"no interrupted or failed run of config {cfg.name!r} to resume{hint} "
                "(see rbench runs); run it without --resume"
            )
        return same[0].id
    run: RunRecord = db.get_run(wanted)
    if run.status not in RESUMABLE:
        raise ConfigError(
            f"run {run.id} is {run.status}, not interrupted or failed: nothing to resume"
        )
    diff = _differences(_results_part(run.config), now)
    if diff:
        raise ConfigError(
            f"run {run.id} was made with another config (differs in: {', '.join(diff)}); "
            "resume it with the same config, or start a new run"
        )
    return run.id

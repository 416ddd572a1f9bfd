"""Sweeps in the results database (docs/sweeps.md#storage).

A sweep row keeps the base config, the ``sweep:`` section and a summary (the
chosen cell, work reused, timings); a ``sweep_cells`` row per (cell, split)
keeps the cell's label, assignments, status, the ranked-table row (objective
mean and CI, the paired test against the best, costs) and the id of the run
that holds its per-stage and per-query results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from retrieval_bench.store.db import ResultsDB, UnknownRunError
from retrieval_bench.store.owner import owner_alive
from retrieval_bench.store.records import new_run_id, now


@dataclass
class SweepCellRecord:
    cell: int
    split: str
    label: str
    assignments: dict[str, Any]
    run_id: str | None
    status: str
    error: str | None
    row: dict[str, Any]


@dataclass
class SweepRecord:
    id: str
    name: str
    created_at: str
    finished_at: str | None
    status: str
    config: dict[str, Any]
    sweep: dict[str, Any]
    summary: dict[str, Any]
    error: str | None
    cells: list[SweepCellRecord] = field(default_factory=list)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def start_sweep(
    db: ResultsDB, name: str, config: Mapping[str, Any], sweep: Mapping[str, Any]
) -> str:
    """Insert a ``running`` sweep and return its id."""
    sweep_id = new_run_id()
    with db.transaction() as c:
        c.execute(
            "INSERT INTO sweeps (id, name, created_at, status, config_json, sweep_json, "
            "summary_json) VALUES (?, ?, ?, 'running', ?, ?, ?)",
            (sweep_id, name, now().isoformat(), _dumps(config), _dumps(sweep),
             _dumps({"owner": _owner()})),
        )  # fmt: skip
    return sweep_id


def _owner() -> dict[str, Any]:
    from retrieval_bench.store.owner import current_owner

    return dict(current_owner())


def reopen_sweep(db: ResultsDB, sweep_id: str) -> None:
    """Mark an interrupted or failed sweep ``running`` again (``--resume``)."""
    get_sweep(db, sweep_id)
    with db.transaction() as c:
        c.execute(
            "UPDATE sweeps SET status = 'running', finished_at = NULL, error = NULL, "
            "summary_json = ? WHERE id = ?",
            (_dumps({"owner": _owner()}), sweep_id),
        )


def record_cell(
    db: ResultsDB,
    sweep_id: str,
    cell: int,
    split: str,
    label: str,
    assignments: Mapping[str, Any],
    run_id: str | None,
    status: str,
    row: Mapping[str, Any],
    error: str | None = None,
) -> None:
    with db.transaction() as c:
        c.execute(
            "INSERT OR REPLACE INTO sweep_cells (sweep_id, cell, split, label, "
            "assignments_json, run_id, status, error, row_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (sweep_id, cell, split, label, _dumps(dict(assignments)), run_id, status, error,
             _dumps(dict(row))),
        )  # fmt: skip


def finish_sweep(
    db: ResultsDB,
    sweep_id: str,
    status: str,
    summary: Mapping[str, Any],
    error: str | None = None,
) -> None:
    with db.transaction() as c:
        c.execute(
            "UPDATE sweeps SET status = ?, finished_at = ?, summary_json = ?, error = ? "
            "WHERE id = ?",
            (status, now().isoformat(), _dumps(dict(summary)), error, sweep_id),
        )


def _settled(status: str, summary: dict[str, Any]) -> str:
    """A ``running`` sweep whose process is gone is reported ``interrupted``."""
    if status == "running" and owner_alive(summary.get("owner")) is False:
        return "interrupted"
    return status


def list_sweeps(db: ResultsDB) -> list[SweepRecord]:
    """Every sweep, newest first (without its cells)."""
    rows = db.query(
        "SELECT id, name, created_at, finished_at, status, config_json, sweep_json, "
        "summary_json, error FROM sweeps ORDER BY created_at DESC, id DESC"
    )
    out = []
    for rid, name, created, finished, status, cfg, sweep, summary, error in rows:
        summ = json.loads(summary)
        out.append(SweepRecord(rid, name, created, finished, _settled(status, summ),
                               json.loads(cfg), json.loads(sweep), summ, error))  # fmt: skip
    return out


def get_sweep(db: ResultsDB, sweep_id: str) -> SweepRecord:
    """The sweep ``sweep_id`` with its cells (in cell order, then split)."""
    found = [s for s in list_sweeps(db) if s.id == sweep_id]
    if not found:
        raise UnknownRunError(f"no sweep {sweep_id!r} in {db.path} (see rbench sweeps)")
    sweep = found[0]
    rows = db.query(
        "SELECT cell, split, label, assignments_json, run_id, status, error, row_json "
        "FROM sweep_cells WHERE sweep_id = ? ORDER BY cell, split",
        (sweep_id,),
    )
    sweep.cells = [
        SweepCellRecord(cell, split, label, json.loads(a), run_id, status, error, json.loads(r))
        for cell, split, label, a, run_id, status, error, r in rows
    ]
    return sweep

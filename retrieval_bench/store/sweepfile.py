"""``results/sweeps/<sweep-id>/sweep.json``: a sweep's database rows, kept on disk.

As ``run.json`` is for a run (:mod:`retrieval_bench.store.runfile`), so that
``rbench runs --rebuild-db`` can load a sweep back into a new database
(:mod:`retrieval_bench.store.rebuild`): the ``sweeps`` row (its JSON columns
decoded) and its ``sweep_cells`` rows, written when the sweep starts and when
it ends (docs/sweeps.md#storage). The cells' runs have their own folders; a
cell whose run is not in the database is loaded without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.io import write_text_atomically

__all__ = ["SWEEP_FILE", "export_sweep", "import_sweep", "save_sweep_file"]

SWEEP_FILE = "sweep.json"
FORMAT = 1
SWEEP_COLS = ("id", "name", "created_at", "finished_at", "status", "config_json",
              "sweep_json", "summary_json", "error")  # fmt: skip
CELL_COLS = ("sweep_id", "cell", "split", "label", "assignments_json", "run_id", "status",
             "error", "row_json")  # fmt: skip


def _decoded(cols: tuple[str, ...], row: tuple[Any, ...]) -> dict[str, Any]:
    """A row as a mapping; ``*_json`` columns decoded, under their name without the suffix."""
    out: dict[str, Any] = {}
    for col, value in zip(cols, row, strict=True):
        if col.endswith("_json"):
            out[col.removesuffix("_json")] = json.loads(value) if value is not None else {}
        else:
            out[col] = value
    return out


def _encoded(cols: tuple[str, ...], data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The column values of a decoded row (JSON written as ``store/sweeps.py`` writes it)."""
    values: list[Any] = []
    for col in cols:
        if col.endswith("_json"):
            values.append(json.dumps(data.get(col.removesuffix("_json"), {}), sort_keys=True,
                                     default=str))  # fmt: skip
        else:
            values.append(data.get(col))
    return tuple(values)


def export_sweep(db: ResultsDB, sweep_id: str) -> dict[str, Any]:
    """The sweep's row and its cells' rows as JSON-ready data."""
    rows = db.query(f"SELECT {', '.join(SWEEP_COLS)} FROM sweeps WHERE id = ?", (sweep_id,))
    cells = db.query(
        f"SELECT {', '.join(CELL_COLS)} FROM sweep_cells WHERE sweep_id = ? ORDER BY cell, split",
        (sweep_id,),
    )
    return {
        "format": FORMAT,
        "sweep": _decoded(SWEEP_COLS, rows[0]),
        "cells": [_decoded(CELL_COLS, c) for c in cells],
    }


def save_sweep_file(db: ResultsDB, sweep_id: str, folder: Path) -> None:
    """Write ``folder/sweep.json`` atomically (a killed write leaves the previous one),
    mode 0600 as it has always been written."""
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(export_sweep(db, sweep_id), indent=1, sort_keys=True, default=str)
    write_text_atomically(folder / SWEEP_FILE, text + "\n", mode=0o600)


def import_sweep(db: ResultsDB, data: Mapping[str, Any]) -> bool:
    """Insert a sweep exported by :func:`export_sweep` in one transaction; False when
    its id is already stored. A cell's run that the database lacks is dropped
    from the cell (its row, with the ranked-table numbers, is kept)."""
    sweep = data["sweep"]
    if db.query("SELECT 1 FROM sweeps WHERE id = ?", (sweep["id"],)):
        return False
    runs = {r[0] for r in db.query("SELECT id FROM runs")}
    with db.transaction() as c:
        c.execute(
            f"INSERT INTO sweeps ({', '.join(SWEEP_COLS)}) "
            f"VALUES ({', '.join('?' * len(SWEEP_COLS))})",
            _encoded(SWEEP_COLS, sweep),
        )
        for cell in data.get("cells", []):
            cell = {**cell, "sweep_id": sweep["id"]}
            if cell.get("run_id") not in runs:
                cell["run_id"] = None
            c.execute(
                f"INSERT INTO sweep_cells ({', '.join(CELL_COLS)}) "
                f"VALUES ({', '.join('?' * len(CELL_COLS))})",
                _encoded(CELL_COLS, cell),
            )
    return True

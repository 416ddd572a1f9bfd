"""``rbench runs --rebuild-db``: a new results database from the run folders.

The database file is moved aside when it is damaged (kept as
``rbench.sqlite.corrupt-<time>`` for inspection), then every
``results/<run-id>/`` the database lacks is loaded back: from its
``run.json`` (:mod:`retrieval_bench.store.runfile`) plus
``query_metrics.jsonl``. Folders written before ``run.json`` existed are
recovered from ``config.json`` and ``query_metrics.jsonl`` alone: their
``all`` and ``dataset=`` tables are recomputed from the per-query metrics
(other subsets, stage timings and LLM counts are not on disk), and the run
says so in its notes. Sweeps come back from ``results/sweeps/<id>/sweep.json``
(:mod:`retrieval_bench.store.sweepfile`). What is not derived from
``results/`` — the prompt lab's tables, which share the file, and sweeps
older than ``sweep.json`` — is never dropped: a healthy file keeps it in
place, and from a damaged one every row still readable is copied over
(:mod:`retrieval_bench.store.salvage`); the report says what was kept and
what could not be read.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval_bench.store.corrupt import CorruptDBError, is_corrupt, move_aside
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.runfile import RUN_FILE, QueryRow, import_run, query_metric_rows
from retrieval_bench.store.salvage import Salvage, salvage
from retrieval_bench.store.stored_config import StoredConfig
from retrieval_bench.store.sweepfile import SWEEP_FILE, import_sweep
from retrieval_bench.workspace import Workspace

__all__ = ["RebuildReport", "rebuild_db"]

LEGACY_NOTE = (
    "rebuilt from results/ without run.json: only the all and dataset= subsets; "
    "no stage timings or LLM counts"
)


@dataclass
class RebuildReport:
    db_path: Path
    results_dir: Path
    moved_to: Path | None = None
    """Where the damaged file went; None when the database was healthy (or absent)."""
    restored: list[tuple[str, str, str]] = field(default_factory=list)
    """(run id, status, name) of each run loaded back."""
    legacy: list[str] = field(default_factory=list)
    """Restored runs that had no run.json (partial tables)."""
    already: int = 0
    """Run folders whose run the database already had."""
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """(folder, reason) of the run and sweep folders that could not be loaded."""
    sweeps: list[tuple[str, str, str]] = field(default_factory=list)
    """(sweep id, status, name) of each sweep loaded back from its ``sweep.json``."""
    sweeps_already: int = 0
    salvage: Salvage | None = None
    """What was copied from the damaged file (None when nothing was moved aside)."""

    @property
    def complete(self) -> bool:
        """Nothing known to exist was lost (``rbench runs --rebuild-db`` exits 0): every
        run and sweep folder loaded, every table of the damaged file read whole. A
        damaged file whose list of tables cannot be read is reported, but what it held
        is unknown (most workspaces have no prompt tables)."""
        lost = self.salvage is not None and (
            self.salvage.not_kept or any(k.partial for k in self.salvage.kept)
        )
        return not self.unreadable and not lost

    def lines(self) -> list[str]:
        """What was and was not restored, for the user: one line per fact."""
        out = []
        if self.moved_to is not None:
            out.append(f"moved the damaged results database {self.db_path} to {self.moved_to}")
        already = self.already + self.sweeps_already
        out.append(
            f"restored {len(self.restored)} run(s), {len(self.sweeps)} sweep(s) from "
            f"{self.results_dir} into {self.db_path}"
            + (f"; {already} already there" if already else "")
        )
        for run_id, status, name in self.restored:
            partial = "  (partial: no run.json)" if run_id in self.legacy else ""
            out.append(f"  {run_id}  {status:<11} {name}{partial}")
        out += [f"  sweep {sid}  {status:<11} {name}" for sid, status, name in self.sweeps]
        out += [f"  not restored: {folder}: {reason}" for folder, reason in self.unreadable]
        if self.salvage is not None:
            out += _salvage_lines(self.salvage)
        return out


def _healthy(path: Path) -> bool:
    try:
        con = sqlite3.connect(path)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):
            return False
        raise
    return rows == [("ok",)]


def rebuild_db(ws: Workspace) -> RebuildReport:
    """Move a damaged database aside and load every run folder it lacks."""
    report = RebuildReport(ws.db_path, ws.results_dir)
    if ws.db_path.exists() and not _healthy(ws.db_path):
        report.moved_to = move_aside(ws.db_path)
    try:
        db = ResultsDB(ws.db_path)
    except CorruptDBError:  # passed the quick check, failed on a deeper page
        report.moved_to = move_aside(ws.db_path)
        db = ResultsDB(ws.db_path)
    with db:
        folders = sorted(ws.results_dir.iterdir()) if ws.results_dir.is_dir() else []
        for folder in folders:
            if folder.is_dir() and not folder.name.startswith("."):
                _restore(db, folder, report)
        sweeps = ws.results_dir / "sweeps"
        for folder in sorted(sweeps.iterdir()) if sweeps.is_dir() else []:
            if (folder / SWEEP_FILE).is_file():
                _restore_sweep(db, folder, report)
    if report.moved_to is not None:
        report.salvage = salvage(ws.db_path, report.moved_to)
    return report


def _restore_sweep(db: ResultsDB, folder: Path, report: RebuildReport) -> None:
    try:
        data = json.loads((folder / SWEEP_FILE).read_text(encoding="utf-8"))
        sweep = data["sweep"]
        if sweep["id"] != folder.name:
            raise ValueError(f"{SWEEP_FILE} is for sweep {sweep['id']}")
        if import_sweep(db, data):
            report.sweeps.append((sweep["id"], sweep["status"], sweep["name"]))
        else:
            report.sweeps_already += 1
    except (OSError, ValueError, KeyError, TypeError, AttributeError,
            sqlite3.IntegrityError) as exc:  # fmt: skip
        report.unreadable.append((str(folder), f"{type(exc).__name__}: {exc}"))


def _restore(db: ResultsDB, folder: Path, report: RebuildReport) -> None:
    run_file, metrics_file = folder / RUN_FILE, folder / "query_metrics.jsonl"
    if not run_file.is_file() and not (folder / "config.json").is_file():
        return  # not a run folder
    try:
        rows = list(query_metric_rows(metrics_file)) if metrics_file.is_file() else []
        legacy = not run_file.is_file()
        if legacy:
            data = _legacy_run(folder, rows)
        else:
            data = json.loads(run_file.read_text(encoding="utf-8"))
        if data["run"]["id"] != folder.name:
            raise ValueError(f"{RUN_FILE} is for run {data['run']['id']}")
        if import_run(db, data, rows):
            run = data["run"]
            report.restored.append((run["id"], run["status"], run["name"]))
            if legacy:
                report.legacy.append(run["id"])
        else:
            report.already += 1
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        sqlite3.IntegrityError,
    ) as exc:
        report.unreadable.append((str(folder), f"{type(exc).__name__}: {exc}"))


def _created_at(run_id: str) -> str:
    try:
        return datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").isoformat() + "+00:00"
    except ValueError:
        return "1970-01-01T00:00:00+00:00"


def _legacy_run(folder: Path, rows: list[QueryRow]) -> dict[str, Any]:
    """run.json-shaped data from a folder written before run.json existed."""
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config, prov = saved.get("config") or {}, saved.get("provenance") or {}
    stored = StoredConfig.of(config)
    datasets: dict[str, str] = {}  # query id → dataset
    metrics_file = folder / "query_metrics.jsonl"
    if metrics_file.is_file():
        for line in metrics_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                datasets[rec["query_id"]] = rec.get("dataset", "")
    members: dict[str, set[str]] = {"all": set(datasets)}
    if len(set(datasets.values())) > 1:
        for qid, name in datasets.items():
            members.setdefault(f"dataset={name}", set()).add(qid)
    order = stored.stage_labels
    per_stage: dict[str, dict[str, dict[str, float | None]]] = {}
    for stage, qid, metric, value in rows:
        per_stage.setdefault(stage, {}).setdefault(qid, {})[metric] = value
    order += [s for s in per_stage if s not in order]
    stages = []
    for pos, stage in enumerate(s for s in order if s in per_stage):
        tables = {}
        for subset, ids in members.items():
            table = _means([m for q, m in per_stage[stage].items() if q in ids])
            if table:
                tables[subset] = table
        stages.append({"stage": stage, "position": pos, "metrics": tables})
    return {
        "run": {
            "id": folder.name,
            "name": stored.name or folder.name,
            "created_at": _created_at(folder.name),
            "status": "done" if rows else "failed",
            "error": None if rows else "rebuilt from results/: the run left no per-query metrics",
            "config": config,
            "provenance": prov,
            "dataset_fingerprint": prov.get("dataset_fingerprint"),
            "notes": LEGACY_NOTE,
        },
        "stages": stages,
    }


def _means(rows: list[dict[str, float | None]]) -> dict[str, float]:
    """Each metric's mean over the queries that have it (as the harness aggregates)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for m, v in row.items():
            sums[m] = sums.get(m, 0.0) + (math.nan if v is None else v)
            counts[m] = counts.get(m, 0) + 1
    return {m: sums[m] / counts[m] for m in sorted(sums)}


def _salvage_lines(found: Salvage) -> list[str]:
    out = []
    if found.sweeps:
        out.append(f"kept {len(found.sweeps)} sweep(s) from the old database (no sweep.json): "
                   + ", ".join(found.sweeps))  # fmt: skip
    for kept in found.kept:
        rows = ", ".join(f"{t} {n} row(s)" for t, n in kept.rows.items() if n) or "no rows"
        out.append(f"kept the {kept.name} tables from the old database: {rows}")
        out += [
            f"  could not read all of {table} in the damaged file (the rest lost): {why}"
            for table, why in kept.partial.items()
        ]
    for name, why in found.unread():
        if name == "sweeps":
            out.append(f"could not read the sweeps in the damaged file (those with a "
                       f"{SWEEP_FILE} are back): {why}")  # fmt: skip
        else:
            out.append(f"could not read {name} tables from the damaged file: {why}")
    return out

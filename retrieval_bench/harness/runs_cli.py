"""``rbench runs``: list the stored runs, delete or prune them, rebuild the database.

* ``rbench runs`` — one line per run: id, status, time, name and, for a run
  that failed or was interrupted, why (a ``running`` run whose process is gone
  reads ``interrupted``, see :mod:`retrieval_bench.store.owner`).
* ``--delete ID [ID ...]`` — removes each run's database rows and its
  ``results/<id>/`` folder. Every id is checked before anything is deleted.
* ``--prune`` — the same for every ``failed`` or ``interrupted`` run.
* ``--rebuild-db`` — moves a damaged database aside and loads the runs back
  from ``results/`` (:mod:`retrieval_bench.store.rebuild`).

A run still being written by a live process (or by another host, which
cannot be checked from here) is never deleted.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from retrieval_bench.store.db import (
    FINISHED_BADLY,
    ResultsDB,
    RunInProgressError,
    RunRecord,
    UnknownRunError,
)
from retrieval_bench.store.owner import describe_owner
from retrieval_bench.workspace import Workspace

__all__ = ["runs_command"]


def runs_command(args: argparse.Namespace, ws: Workspace) -> int:
    """Run the ``runs`` subcommand; returns the exit code."""
    if getattr(args, "rebuild_db", False):
        return _rebuild(ws)
    if getattr(args, "delete", None) or getattr(args, "prune", False):
        return _delete(ws, args.delete or [], prune=args.prune)
    return _list(ws, args.json)


def _list(ws: Workspace, as_json: bool) -> int:
    with ResultsDB(ws.db_path) as db:
        runs = db.list_runs()
    if as_json:
        rows = [
            {
                "id": r.id,
                "name": r.name,
                "status": r.status,
                "created_at": r.created_at,
                "finished_at": r.finished_at,
                "error": r.error,
            }
            for r in runs
        ]
        print(json.dumps(rows))
        return 0
    for r in runs:
        total = r.timings.get("total")
        took = f"{total:.1f}s" if isinstance(total, int | float) else "-"
        why = f"  ({r.error})" if r.error else ""
        print(f"{r.id}  {r.status:<11} {took:>8}  {r.name}{why}")
    return 0


def _run_folder(ws: Workspace, run_id: str) -> Path | None:
    """``results/<run_id>``, None for an id that is not one plain folder name."""
    if not run_id or run_id in (".", "..") or Path(run_id).name != run_id or "\\" in run_id:
        return None
    return ws.results_dir / run_id


def _check_deletable(db: ResultsDB, run: RunRecord) -> None:
    alive = db.run_alive(run)
    if alive or (alive is None and run.owner):
        where = describe_owner(run.owner)
        why = "is still running" if alive else "is running on another host, not checkable here"
        raise RunInProgressError(
            f"run {run.id} {why} ({where}); not deleted — stop it or wait for it to finish"
        )


def _delete(ws: Workspace, ids: list[str], prune: bool) -> int:
    with ResultsDB(ws.db_path) as db:
        if prune:
            runs = [r for r in db.list_runs() if r.status in FINISHED_BADLY]
            if not runs:
                print("nothing to prune: no failed or interrupted runs")
                return 0
        else:
            runs = []
            for run_id in dict.fromkeys(ids):
                try:
                    runs.append(db.get_run(run_id))
                except UnknownRunError:
                    raise UnknownRunError(
                        f"no run {run_id!r} in {db.path} (see `rbench runs`); nothing was deleted"
                    ) from None
        for run in runs:  # all checked before the first deletion
            _check_deletable(db, run)
        for run in runs:
            db.delete_run(run.id)
            folder = _run_folder(ws, run.id)
            if folder is not None and folder.is_dir():
                shutil.rmtree(folder)
                where = f"and {folder}"
            else:
                where = "(it had no results folder)"
            print(f"deleted run {run.id} ({run.status}, {run.name}) {where}")
    return 0


def _rebuild(ws: Workspace) -> int:
    from retrieval_bench.store.rebuild import rebuild_db

    report = rebuild_db(ws)
    if report.moved_to is not None:
        print(f"moved the damaged results database {report.db_path} to {report.moved_to}")
    print(
        f"restored {len(report.restored)} run(s) from {report.results_dir} into {report.db_path}"
        + (f"; {report.already} already there" if report.already else "")
    )
    for run_id, status, name in report.restored:
        partial = "  (partial: no run.json)" if run_id in report.legacy else ""
        print(f"  {run_id}  {status:<11} {name}{partial}")
    for folder, reason in report.unreadable:
        print(f"  not restored: {folder}: {reason}")
    if report.salvaged:
        print(f"prompt-lab tables copied from the damaged file: {', '.join(report.salvaged)}")
    if report.lost:
        print(f"prompt-lab tables unreadable in the damaged file (lost): {', '.join(report.lost)}")
    return 1 if report.unreadable else 0

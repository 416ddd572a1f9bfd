"""``rbench runs`` and ``rbench show``: the stored runs.

``rbench show RUN_ID`` prints a stored run's per-stage table (``--subset``,
``-k`` at any cut-off the run computed, ``--format``, ``--out`` with ``--force``
(:mod:`retrieval_bench.out_file`: never the results database), and the paired
columns against any ``--baseline`` stage on any stored ``--metric``), then its
module- and function-level tables when it has them, as ``rbench run`` does
(:mod:`retrieval_bench.harness.run.level_tables`; not with ``--format csv``).

* ``rbench runs`` — one line per run: id, status, time, name and, for a run
  that failed or was interrupted, why (a ``running`` run whose process is gone
  reads ``interrupted``, see :mod:`retrieval_bench.store.owner`).
* ``--delete ID [ID ...]`` — removes each run's database rows and its
  ``results/<id>/`` folder. Every id is checked before anything is deleted.
* ``--prune`` — the same for every ``failed`` or ``interrupted`` run.
* ``--rebuild-db`` — moves a damaged database aside, loads the runs and sweeps
  back from ``results/``, keeps the prompt lab's tables, and prints what was
  and was not restored (:mod:`retrieval_bench.store.rebuild`).

A run still being written by a live process (or by another host, which
cannot be checked from here) is never deleted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import EXIT_FAILED, EXIT_OK, loads_line, workspace
from retrieval_bench.errors import ConfigError
from retrieval_bench.out_file import FORCE_HELP, out_file
from retrieval_bench.store.db import (
    FINISHED_BADLY,
    ResultsDB,
    RunInProgressError,
    RunRecord,
    UnknownRunError,
)
from retrieval_bench.store.owner import describe_owner
from retrieval_bench.store.stored_config import StoredConfig
from retrieval_bench.workspace import Workspace


def cmd_runs(args: argparse.Namespace) -> int:
    """Run ``rbench runs``; returns the exit code."""
    ws = workspace(args)
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
        return EXIT_OK
    for r in runs:
        total = r.timings.get("total")
        took = f"{total:.1f}s" if isinstance(total, int | float) else "-"
        why = f"  ({r.error})" if r.error else ""
        print(f"{r.id}  {r.status:<11} {took:>8}  {r.name}{why}")
    return EXIT_OK


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
                return EXIT_OK
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
    return EXIT_OK


def _rebuild(ws: Workspace) -> int:
    from retrieval_bench.store.rebuild import rebuild_db

    report = rebuild_db(ws)
    for line in report.lines():
        print(line)
    return EXIT_OK if report.complete else EXIT_FAILED


def cmd_show(args: argparse.Namespace) -> int:
    """Run ``rbench show RUN_ID``: the table on stdout, notes for a reader after it."""
    from retrieval_bench.harness.compare.paired import decode
    from retrieval_bench.harness.run.level_tables import format_level_tables
    from retrieval_bench.harness.run.report import (
        answer_aggregates,
        failed_note,
        format_answer_table,
        format_table,
        stage_columns,
        stored_failures,
    )

    ws = workspace(args)
    out_to = None
    if args.out:  # checked before the database is opened: a bad path costs nothing
        out_to = out_file(args.out, force=args.force, inputs=[(ws.db_path, "the results database")])
    db = ResultsDB(ws.db_path)
    run = db.get_run(args.run_id)
    subset = _stored_subset(db, run, args.subset)
    table = db.stage_table(run.id, subset)
    questions = stored_failures(run.provenance, subset)
    total, failed = questions if questions is not None else (None, {})
    if args.json:
        view = decode(table)
        out = {"run": run.id, "subset": args.subset, "table": table,
               "paired": view.as_dict() if view is not None else None,
               "questions": total, "failed_questions": failed}  # fmt: skip
        print(json.dumps({**out, "status": run.status, "error": run.error}))
        return EXIT_OK
    order = [s.stage for s in db.stages(run.id)]
    title = f"{run.name} [{args.subset}] run {run.id} ({run.status})"
    paired_k_note: str | None = None
    levels: list[str] = []  # the module- and function-level tables, when the run has them
    stored = StoredConfig.of(run.config)
    if stored.is_eval:  # an `rbench eval` run: its answer metrics
        cols = list(dict.fromkeys(m for row in table.values() for m in row))
    else:
        k = _show_k(run.id, stored, args.k)
        cols = stage_columns(k, stored.budgets)
        table_k = stored.table_k
        if k != table_k and any(f"Lost@{k}" in row for row in table.values()):
            cols = [f"Lost@{k}" if c == "lost" else c for c in cols]  # "lost" is at table_k
        title += f" k={k}"
        table, paired_k_note = _paired_at_k(db, run, table, k, subset, args.baseline, args.metric)
        if args.format != "csv":  # a CSV stays the one stage table
            ks, names = stored.ks, stored.levels
            stages = [s for s in order if s in table and s != "answer"]
            heading = f"{run.name} [{args.subset}]"
            levels = format_level_tables(
                table, stages, ks, k, names, heading, args.format, stored.conventions, total
            )
    answer_row = table.pop("answer", None) if not stored.is_eval else None
    shown = [s for s in order if s in table]
    paired = not stored.is_eval  # the paired columns, when the run stored them
    rendered = format_table(table, cols, shown, title, args.format, paired=paired)
    note = failed_note(failed, total or 0)
    if note and args.format == "markdown":  # a report: it says so below its table (as run's)
        rendered, note = f"{rendered}\n\n{note}", None
    if args.out or args.format == "markdown":  # the level tables belong to the report
        rendered, levels = "\n".join([rendered, *levels]), []
    if out_to is not None:
        out_to.write_text(rendered + "\n")
        print(f"wrote the {args.format} table of run {run.id} to {args.out}", file=sys.stderr)
    else:
        print(rendered)
    # the rest is for a reader: with csv/markdown or --out, stdout is the table alone
    notes = sys.stdout if args.format == "text" and not args.out else sys.stderr
    if note:
        print(note, file=notes)
    if paired_k_note:
        print(paired_k_note, file=notes)
    for level_table in levels:  # text on stdout: below the stage table and its notes
        print(level_table)
    if run.error:  # why it failed or was interrupted
        print(f"\n{run.status}: {run.error}", file=notes)
    if answer_row is not None:
        answers = format_answer_table(answer_aggregates(answer_row), f"\n{run.name} answers")
        print(answers, file=notes)
    loads = loads_line({key[5:]: v for key, v in run.timings.items() if key.startswith("load:")})
    if loads:
        print(f"\n{loads}", file=notes)
    others = [s for s in db.subsets(run.id) if s != subset]
    if others:
        print(f"\nother subsets: {', '.join(others)}", file=notes)
    return EXIT_OK


def _stored_subset(db: ResultsDB, run: RunRecord, subset: str) -> str:
    """The stored subset ``rbench show --subset`` names: ``subset`` itself, ``all`` for
    ``dataset=NAME`` of a run over that one dataset (only ``all`` is stored, and it is
    that dataset's table), or a one-line :class:`ConfigError` naming the run's subsets
    (as ``rbench compare`` does) instead of an empty table."""
    stored = db.subsets(run.id)
    if subset in stored or (subset == "all" and not stored):
        return subset
    names = StoredConfig.of(run.config).dataset_names
    if len(names) == 1 and subset == f"dataset={names[0]}" and "all" in stored:
        return "all"
    raise ConfigError(
        f"run {run.id} has no subset {subset!r}; its subsets: {', '.join(stored) or 'none'}"
    )


def _paired_at_k(
    db: ResultsDB,
    run: RunRecord,
    table: dict[str, dict[str, float]],
    k: int,
    subset: str,
    baseline: str | None = None,
    metric: str | None = None,
) -> tuple[dict[str, dict[str, float]], str | None]:
    """The table with its paired columns at cut-off ``k``, against ``baseline`` on
    ``metric`` when given: a stored test of an ``@<table_k>`` metric (the default
    ``R@<table_k>``) is redone at ``k``, and any baseline stage or per-query metric
    (``function_Acc@5``) is tested anew, from the stored per-query metrics — the
    subset ``all`` only, whose queries are all the run's; for another subset the
    columns are left out, with a note (what to run instead). Returns the table and
    that note."""
    from retrieval_bench.config import ANSWER_STAGE
    from retrieval_bench.harness.compare import paired

    view = paired.decode(table)
    stored = StoredConfig.of(run.config)
    table_k = stored.table_k
    at_k = view is not None and k != table_k and view.metric.endswith(f"@{table_k}")
    if not at_k and baseline is None and metric is None:
        return table, None
    plain = paired.without_paired(table)
    if subset != "all" and baseline is None and metric is None:
        return plain, (
            f"paired columns left out: they were computed at k={table_k} "
            f"({view.header if view else ''}); rbench show {run.id} --subset {subset} "
            f"-k {table_k} shows them"
        )
    if subset != "all":
        return plain, (
            "paired columns left out: --baseline and --metric test every query of the "
            f"run; rbench show {run.id} --baseline/--metric without --subset shows them"
        )
    stages = [s for s in plain if s != ANSWER_STAGE]
    default_stage, default_metric = paired.resolve_baseline(stored)
    base = baseline or (view.baseline if view is not None else default_stage)
    if base not in stages:
        raise ConfigError(f"--baseline {base!r} is not a stage of run {run.id}: {stages}")
    if metric is None:
        metric = view.metric if view is not None else default_metric
        if at_k:
            metric = f"{metric.rsplit('@', 1)[0]}@{k}"
    per_query = {s: db.query_metrics(run.id, s) for s in stages}
    if not any(metric in row for rows in per_query.values() for row in rows.values()):
        raise ConfigError(f"--metric {metric!r}: run {run.id} stored no such per-query metric")
    inputs = paired.fusion_inputs(stored)
    redone = paired.paired_view(per_query, stages, base, metric, inputs)
    if redone is not None:
        for stage, entries in paired.encode(redone).items():
            plain[stage].update(entries)
    return plain, None


def _show_k(run_id: str, config: StoredConfig, wanted: int | None) -> int:
    """The cut-off ``rbench show`` prints: ``wanted`` if the run computed it (else a
    ConfigError listing the ks it has), by default the run's ``table_k``."""
    default = config.table_k
    if wanted is None:
        return default
    available = sorted({default, *config.ks})
    if wanted not in available:
        raise ConfigError(
            f"run {run_id} has no metrics at k={wanted}; it computed k = "
            f"{', '.join(map(str, available))} (rbench run -k {wanted} computes a new run)"
        )
    return wanted


def add_runs_show_parser(
    sub: Any, positive_int: Callable[[str], int], table_formats: Sequence[str]
) -> None:
    """``rbench runs``, ``rbench show RUN_ID``."""
    rs = sub.add_parser("runs", help="list stored benchmark runs")
    rs.add_argument("--json", action="store_true", help="print the runs as JSON")
    manage = rs.add_mutually_exclusive_group()
    manage.add_argument(
        "--delete", nargs="+", metavar="ID",
        help="delete these runs: their database rows and results/<ID>/ folders",
    )  # fmt: skip
    manage.add_argument(
        "--prune", action="store_true", help="delete every failed or interrupted run"
    )
    manage.add_argument(
        "--rebuild-db", action="store_true",
        help="move a damaged results database aside, reload the runs and sweeps from "
        "results/ and keep the prompt lab's tables",
    )  # fmt: skip
    rs.set_defaults(func=cmd_runs)
    sh = sub.add_parser("show", help="print a stored run's per-stage table")
    sh.add_argument("run_id", help="a run id from rbench runs")
    sh.add_argument("--subset", default="all", help="e.g. leaks_path=false, dataset=shopapi")
    sh.add_argument(
        "-k", "--k", type=positive_int, dest="k", metavar="K",
        help="cut-off of the table (default: the run's table_k); one of the ks the run computed",
    )  # fmt: skip
    sh.add_argument("--format", choices=table_formats, default="text", help="table format")
    sh.add_argument("--out", metavar="FILE", help="write the table to FILE instead of stdout")
    sh.add_argument("--force", action="store_true", help=FORCE_HELP)
    sh.add_argument("--json", action="store_true", help="print the table as JSON")
    sh.add_argument(
        "--baseline", metavar="STAGE",
        help="pair every stage with this one (default: the run's baseline)",
    )  # fmt: skip
    sh.add_argument(
        "--metric", metavar="METRIC",
        help="per-query metric of the paired columns, at any level the run computed "
        "(e.g. function_Acc@5; default: the run's)",
    )  # fmt: skip
    sh.set_defaults(func=cmd_show)

"""``rbench sweep CONFIG`` and ``rbench sweeps [ID]`` (docs/sweeps.md).

``sweep`` expands the config's ``sweep:`` grid, runs every cell on the selection
split with shared work, prints the ranked table and the chosen cell's score on
the report split beside the base config's, and stores it all; ``sweeps`` lists
the stored sweeps or prints one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from retrieval_bench.cli.common import EXIT_OK, reporter, workspace


def cmd_sweep(args: argparse.Namespace) -> int:
    from retrieval_bench.cli.run import overrides
    from retrieval_bench.sweep.grid import expand
    from retrieval_bench.sweep.runner import run_sweep
    from retrieval_bench.sweep.spec import load_sweep_config

    # --limit, --jobs, ... go into the base before it is checked; every cell takes them
    edit = overrides(args).apply
    base, spec = load_sweep_config(args.config, data_root=args.data_root, edit=edit)
    cells = expand(base, spec, args.max_cells, source=str(args.config))
    with reporter(enabled=not args.json) as progress:
        result = run_sweep(base, spec, cells, workspace(args), progress, resume=args.resume)
    rows = [s.row() | {"cell": s.cell.index, "label": s.cell.label, "error": s.error}
            for s in result.ranked]  # fmt: skip
    report = [s.row() | {"cell": s.cell.index, "label": s.cell.label} for s in result.report]
    if args.json:
        print(json.dumps({"sweep_id": result.sweep_id, "cells": rows, "report": report,
                          "work": result.counts.as_dict(), "seconds": result.seconds,
                          "executor": result.executor}))  # fmt: skip
        return EXIT_OK
    _print(result.name, result.sweep_id, spec.objective, spec.select_on, spec.report_on,
           rows, report, result.counts.as_dict(), result.seconds)  # fmt: skip
    return EXIT_OK


def _print(
    name: str, sweep_id: str, objective: str, select_on: str | None, report_on: str | None,
    rows: list[dict[str, Any]], report: list[dict[str, Any]], work: dict[str, int],
    seconds: float,
) -> None:  # fmt: skip
    from retrieval_bench.sweep.report import ranked_table, report_lines

    stage = next((r.get("stage") for r in rows if r.get("stage")), "the last stage")
    print(f"\nsweep {name} ({len(rows)} cells on {select_on or 'all'}, "
          f"objective {objective} of each cell's last stage, e.g. {stage}; "
          f"p: paired randomisation test against the best, Holm-adjusted)")  # fmt: skip
    print(ranked_table(rows, objective))
    print()
    print("\n".join(report_lines(report, objective, report_on)))
    print(f"\nwork: chunkings {work.get('chunkings_run', 0)} run, "
          f"{work.get('chunkings_reused', 0)} reused; stages {work.get('stages_run', 0)} run, "
          f"{work.get('stages_reused', 0)} reused; {seconds:.1f}s")  # fmt: skip
    print(
        f"sweep {sweep_id} stored (rbench sweeps {sweep_id}; each cell is a run)", file=sys.stderr
    )


def cmd_sweeps(args: argparse.Namespace) -> int:
    from retrieval_bench.store.db import ResultsDB
    from retrieval_bench.store.sweeps import get_sweep, list_sweeps

    db = ResultsDB(workspace(args).db_path)
    if args.sweep_id is None:
        sweeps = list_sweeps(db)
        if args.json:
            print(json.dumps([{"id": s.id, "name": s.name, "status": s.status,
                               "created_at": s.created_at, "summary": s.summary}
                              for s in sweeps]))  # fmt: skip
            return EXIT_OK
        for s in sweeps:
            chosen = s.summary.get("chosen_label") or "-"
            print(f"{s.id}  {s.status:<11}  {s.created_at[:19]}  {s.name}  "
                  f"({s.summary.get('cells', '?')} cells; chosen: {chosen})"
                  + (f"  [{s.error}]" if s.error else ""))  # fmt: skip
        if not sweeps:
            print("no sweeps stored yet (rbench sweep CONFIG)", file=sys.stderr)
        return EXIT_OK
    sweep = get_sweep(db, args.sweep_id)
    select = [c.row | {"cell": c.cell, "label": c.label, "error": c.error, "run_id": c.run_id}
              for c in sweep.cells if c.split.startswith("select")]  # fmt: skip
    select.sort(key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r["cell"]))
    report = [c.row | {"cell": c.cell, "label": c.label, "run_id": c.run_id}
              for c in sweep.cells if c.split.startswith("report")]  # fmt: skip
    report.sort(key=lambda r: r["cell"] == -1)
    if args.json:
        print(json.dumps({"id": sweep.id, "status": sweep.status, "summary": sweep.summary,
                          "cells": select, "report": report}))  # fmt: skip
        return EXIT_OK
    spec = sweep.sweep
    _print(sweep.name, sweep.id, spec.get("objective", "?"), spec.get("select_on"),
           spec.get("report_on"), select, report, sweep.summary.get("work", {}),
           float(sweep.summary.get("seconds", 0.0)))  # fmt: skip
    return EXIT_OK

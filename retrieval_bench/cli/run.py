"""``rbench run CONFIG``: run a benchmark and print its per-stage tables.

Progress (a line per dataset and stage, counts and ETA for the index and the
LLM calls) and the dataset warnings go to stderr; stdout is the tables, or
one JSON object with ``--json``, or one CSV with ``--format csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from retrieval_bench.cli.common import EXIT_OK, loads_line, reporter, workspace

if TYPE_CHECKING:
    from retrieval_bench.plan import Overrides


def cmd_run(args: argparse.Namespace) -> int:
    from retrieval_bench.harness.run.level_tables import format_level_tables
    from retrieval_bench.harness.run.report import (
        count_noun,
        csv_tables,
        failed_note,
        format_answer_section,
        format_table,
        span_columns,
        stage_columns,
    )
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.plan import load_plan

    # the command line's overrides go into the config before it is checked, never after
    plan = load_plan(args.config, overrides(args), data_root=args.data_root)
    cfg = plan.config

    def announce(ds: Any) -> None:
        # --json keeps stdout for the JSON alone; the warnings still go to stderr
        if not args.json:
            msg = f"{ds.spec.name}: {len(ds.examples)} questions, {len(ds.corpus.chunks)} chunks"
            print(msg, file=sys.stderr)
        for err in ds.row_errors:
            print(f"  warning: {ds.spec.questions}: {err}", file=sys.stderr)
        for qid, paths in ds.missing_gold.items():
            reasons = ds.missing_reasons
            why = ", ".join(f"{p} ({reasons.get(p, 'not in the snapshot')})" for p in paths)
            print(f"  warning: {qid}: gold file(s) not indexed: {why}", file=sys.stderr)

    # a line per dataset and stage, counts and ETA for the index and LLM calls (stderr)
    with reporter(enabled=not args.json) as progress:
        result = run_benchmark(
            plan, workspace(args), progress=progress, on_dataset=announce, resume=args.resume
        )
    answers = result.answer_stage.summary() if result.answer_stage is not None else None
    if args.json:
        from retrieval_bench.harness.compare.paired import decode

        out = {"run_id": result.run_id, "tables": result.tables, "counts": result.counts,
               "failed_questions": result.failed}  # fmt: skip
        views = {subset: decode(table) for subset, table in result.tables.items()}
        paired = {subset: v.as_dict() for subset, v in views.items() if v is not None}
        print(json.dumps({**out, "paired": paired, "sweeps": result.sweeps, "answers": answers,
                          "loads": result.loads}))  # fmt: skip
        return EXIT_OK
    cols = stage_columns(cfg.table_k, cfg.metrics.budgets)
    if cfg.table_columns:  # the config's own columns (lost and seconds always follow)
        cols = [*cfg.table_columns, *(c for c in ("lost", "seconds") if c not in cfg.table_columns)]
    all_rows = result.tables.get("all", {}).values()
    if any(r.get("llm_calls", 0) or r.get("llm_cache_hits", 0) for r in all_rows):
        cols += ["llm_calls", "llm_cache_hits"]
    shown = {
        subset: table
        for subset, table in result.tables.items()
        if subset == "all" or args.all_subsets or subset.startswith("leaks_path")
    }
    if args.format == "csv":  # the stage tables only, as one CSV (stdout stays parseable)
        print(csv_tables(shown, cols, result.stage_order, paired=True))
        for subset in shown:  # stdout stays one CSV: the notes go to stderr
            note = failed_note(result.failed.get(subset, {}), result.counts[subset])
            if note:
                print(f"[{subset}] {note}", file=sys.stderr)
        print(f"run {result.run_id} stored in {result.out_dir}", file=sys.stderr)
        return EXIT_OK
    fmt = args.format
    for subset, table in shown.items():
        n = result.counts[subset]
        queries = count_noun(n, "query", "queries")
        title = f"\n{cfg.name} [{subset}] ({queries}, file level, k={cfg.table_k})"
        print(format_table(table, cols, result.stage_order, title, fmt, paired=True))
        note = failed_note(result.failed.get(subset, {}), n)
        if note:
            print(f"\n{note}" if fmt == "markdown" else note)
        spans = span_columns(cfg.table_k)
        if subset == "all" and any(spans[0] in row for row in table.values()):
            title = f"\n{cfg.name} [{subset}] span level (queries with gold spans, k={cfg.table_k})"
            print(format_table(table, spans, result.stage_order, title, fmt))
        if subset == "all":
            for levels_table in format_level_tables(
                table, result.stage_order, cfg.metrics.ks, cfg.table_k, cfg.metrics.levels,
                f"{cfg.name} [{subset}]", fmt, cfg.metrics.conventions, n,
            ):  # fmt: skip
                print(levels_table)
    for stage, rows in result.sweeps.items():
        title = f"\n{stage}: threshold sweep (keep candidates scoring >= threshold; file level)"
        table = {f"{r['threshold']:.3g}": r for r in rows}
        swept = format_table(table, ["P", "R", "F1", "kept"], title=title, fmt=fmt)
        print(swept.replace("stage", "t    " if fmt == "text" else "threshold", 1))
    if answers is not None:
        print(format_answer_section(cfg.name, answers))
    loads = loads_line(result.loads)
    if loads:
        print(f"\n{loads}")
    print(f"\nrun {result.run_id} stored in {result.out_dir} ({result.seconds:.1f}s)")
    return EXIT_OK


def overrides(args: argparse.Namespace) -> Overrides:
    """What ``rbench run``'s options change in the config (:class:`Overrides`)."""
    from retrieval_bench.plan import Overrides

    return Overrides(
        table_k=getattr(args, "k", None),
        split=getattr(args, "split", None) or None,
        limit=getattr(args, "limit", None),
        executor=args.executor,
        jobs=args.jobs,
        ray_address=args.ray_address,
        keep_llm_server=getattr(args, "keep_llm_server", False),
    )

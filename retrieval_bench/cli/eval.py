"""``rbench eval PREDICTIONS.jsonl``: score a predictions file and print the scores.

The scoring and storing is :func:`retrieval_bench.harness.eval.predictions.evaluate_predictions`;
this module prints its outcome (a table, or ``--json``) and writes ``--out``
(checked before any scoring: never the predictions, the ``--config`` file or
the results database, an existing file only with ``--force``;
:mod:`retrieval_bench.out_file`).

Exit codes: 0 scored (some samples may have failed: they are reported); 1
every sample failed on every metric; 2 bad input (unreadable file, no valid
row, bad metric spec).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_bench.cli.common import EXIT_FAILED, EXIT_OK, workspace
from retrieval_bench.out_file import out_file

if TYPE_CHECKING:
    from retrieval_bench.metrics.answer.evaluator import EvaluationResult

SHOWN_FAILURES = 10


def cmd_eval(args: argparse.Namespace) -> int:
    """Run ``rbench eval`` (flags: :mod:`retrieval_bench.cli.parser`); returns the exit code."""
    from retrieval_bench.harness.eval.predictions import evaluate_predictions

    ws = workspace(args)
    out = None
    if args.out:
        inputs = [(args.predictions, "the predictions file"), (args.config, "the --config file"),
                  (ws.db_path, "the results database")]  # fmt: skip
        out = out_file(args.out, force=args.force, inputs=inputs)
    outcome = evaluate_predictions(
        args.predictions,
        ws,
        metrics=args.metric,
        config=args.config,
        name=args.name,
        store_run=not args.no_store,
        consistency=args.consistency,
    )
    path, result, reports = outcome.path, outcome.result, outcome.reports
    for err in outcome.row_errors:
        print(f"  warning: {path}: {err}", file=sys.stderr)
    if out is not None:
        out.write_lines(json.dumps(row, ensure_ascii=False) + "\n" for row in result.rows())
    if args.json:
        print(
            json.dumps(
                {
                    "run_id": outcome.run_id,
                    "name": outcome.name,
                    "predictions": str(path),
                    "row_errors": [str(e) for e in outcome.row_errors],
                    **result.as_dict(),
                    "consistency": {m: r.as_dict() for m, r in reports.items()},
                    "out": args.out,
                    "results_dir": str(outcome.out_dir) if outcome.out_dir else None,
                }
            )
        )
    else:
        print_report(path, result, reports, outcome.run_id, outcome.out_dir)
    if result.all_failed:
        print(
            f"rbench: error: every sample of {path} failed on every metric; "
            "see the errors above (is the LLM server reachable?)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def print_report(
    path: Path,
    result: EvaluationResult,
    reports: dict[str, Any],
    run_id: str | None,
    out_dir: Path | None,
) -> None:
    """The scores table, the first missing values, the consistency reports and
    where the run was stored."""
    n, k = len(result.sample_ids), len(result.metric_names)
    print(f"{path} ({n} samples, {k} metrics, {result.seconds:.1f}s)")
    print(result.table())
    if result.failures:
        print(f"\n{len(result.failures)} missing values:")
        for f in result.failures[:SHOWN_FAILURES]:
            print(f"  {f.sample_id} {f.metric}: {f.error}")
        if len(result.failures) > SHOWN_FAILURES:
            print(f"  ... and {len(result.failures) - SHOWN_FAILURES} more (see --out or --json)")
    for metric, report in reports.items():
        print(f"\nconsistency of {metric}:")
        print(report.format())
    if run_id is not None:
        print(f"\nrun {run_id} stored in {out_dir}")

"""``rbench compare``: print a run comparison and apply the regression gate
(docs/metrics.md#multiple-comparisons).

One aligned table per metric (rows: candidate run × stage pair), the chosen
test's p-value before and after Holm's correction, and marks: ``▲``/``▼`` for
a change in the better/worse direction, ``*`` / ``**`` / ``***`` when the
Holm-adjusted p is below alpha, alpha/5, alpha/50. ``--gate BASELINE`` makes
the exit status 1 when some run is significantly worse than BASELINE on the
gate metric(s). The statistics live in :mod:`retrieval_bench.harness.compare.runs`,
imported when the command runs (it loads scipy).

Above the tables: each run's config and data, a ``warning:`` line when runs on
different data are compared anyway (``--allow-different-data``; without it such a
comparison is refused, exit 2) and a line naming the stages one run lacks, which
are not compared (docs/metrics.md#multiple-comparisons).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from retrieval_bench.cli.common import EXIT_FAILED, EXIT_OK, workspace
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.compare.comparison import Comparison, ComparisonRow
from retrieval_bench.harness.compare.defaults import DEFAULT_RESAMPLES
from retrieval_bench.text_table import aligned

EXIT_GATE_FAILED = EXIT_FAILED


def significance_mark(row: ComparisonRow, alpha: float) -> str:
    """``▲``/``▼`` by direction of the delta, then stars by the Holm p-value."""
    arrow = {"better": "▲", "worse": "▼"}.get(row.direction, "")
    stars = sum(row.p_holm < alpha / f for f in (1, 5, 50)) if math.isfinite(row.p_holm) else 0
    return arrow + "*" * stars


def _num(value: float, metric: str) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:.2f}" if metric == "lost" else f"{value:.3f}"


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}" if math.isfinite(value) else "-"


def _p(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def _cells(row: ComparisonRow, alpha: float) -> list[str]:
    m = row.metric
    n = str(row.n_pairs) + (f" (-{row.n_dropped})" if row.n_dropped else "")
    return [
        row.candidate,
        row.stage,
        _num(row.baseline_mean, m),
        _num(row.candidate_mean, m),
        _signed(row.delta),
        f"[{_signed(row.ci_low)}, {_signed(row.ci_high)}]",
        _p(row.p_value),
        _p(row.p_holm),
        significance_mark(row, alpha),
        _signed(row.effect_size, 2),
        n,
    ]


HEADER = [
    "run",
    "stage",
    "baseline",
    "candidate",
    "delta",
    "95% CI",
    "p",
    "p_holm",
    "sig",
    "d",
    "n",
]
LEFT_ALIGNED = {0, 1, 8}


def _table(rows: list[list[str]]) -> list[str]:
    return aligned(HEADER, rows, left=LEFT_ALIGNED).split("\n")


def _run(comp: Comparison, run_id: str) -> str:
    """``RUN: config NAME (...), data D (...)``: which config and data the run had."""
    side = comp.sides.get(run_id)
    return f"{run_id}: {side.describe()}" if side else f"{run_id} ({comp.run_names[run_id]})"


def format_comparison(comp: Comparison) -> str:
    """The whole comparison as text: a header, then one table per metric."""
    resampled = comp.test in ("randomisation", "bootstrap")
    how = f" ({comp.n_resamples} resamples, seed {comp.seed})" if resampled else ""
    out = [
        f"baseline {_run(comp, comp.baseline)}  [subset {comp.subset}]",
        *(f"candidate {_run(comp, c)}" for c in comp.candidates),
        *(f"warning: {w}" for w in comp.data_warnings),
        *(gap.describe(comp.baseline) for gap in comp.stage_gaps),
        f"test: {comp.test}{how}, alpha {comp.alpha:g}; Holm correction per metric over its "
        f"rows; CI: {comp.confidence:.0%} paired bootstrap ({comp.n_resamples} resamples)",
        f"marks: ▲ better ▼ worse; * p_holm < {comp.alpha:g}, ** < {comp.alpha / 5:g}, "
        f"*** < {comp.alpha / 50:g}; d = Cohen's d_z; delta = candidate - baseline",
    ]
    for metric in comp.metrics:
        rows = comp.rows_for(metric)
        if not rows:
            continue
        sense = "higher" if rows[0].higher_is_better else "lower"
        out += ["", f"{metric} ({sense} is better)"]
        out += _table([_cells(r, comp.alpha) for r in rows])
    return "\n".join(out)


def _gate_line(row: ComparisonRow) -> str:
    return (
        f"gate: FAIL run {row.candidate} stage {row.stage} metric {row.metric} "
        f"delta {row.delta:+.4f} p_holm {_p(row.p_holm)}"
    )


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``rbench compare``; exit 1 only when the gate finds a significant regression."""
    from retrieval_bench.harness.compare.runs import compare_runs, gate
    from retrieval_bench.store.db import ResultsDB

    if args.gate and args.baseline and args.gate != args.baseline:
        raise ConfigError(
            f"--gate {args.gate} and --baseline {args.baseline} disagree; give one baseline"
        )
    if args.gate_metric and not args.gate:
        raise ConfigError("--gate-metric needs --gate BASELINE")
    gate_metrics = list(args.gate_metric or [])
    db = ResultsDB(workspace(args).db_path)
    try:
        comp = compare_runs(
            db,
            args.runs,
            baseline=args.gate or args.baseline,
            metrics=args.metric,
            extra_metrics=gate_metrics,
            stages=args.stage,
            subset=args.subset,
            test=args.test,
            alpha=args.alpha,
            n_resamples=args.resamples,
            seed=args.seed,
            allow_different_data=args.allow_different_data,
        )
    finally:
        db.close()
    failures = gate(comp, gate_metrics or None) if args.gate else []
    if args.json:
        out = comp.to_dict()
        if args.gate:
            out["gate"] = {
                "baseline": comp.baseline,
                "metrics": gate_metrics or comp.metrics[:1],
                "passed": not failures,
                "failures": [
                    {"run": r.candidate, "stage": r.stage, "metric": r.metric,
                     "delta": r.delta, "p_holm": r.p_holm}
                    for r in failures
                ],
            }  # fmt: skip
        print(json.dumps(out))
        return EXIT_GATE_FAILED if failures else EXIT_OK
    for warning in comp.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(format_comparison(comp))
    if args.gate:
        print()
        for row in failures:
            print(_gate_line(row))
        if not failures:
            on = ", ".join(gate_metrics or comp.metrics[:1])
            print(f"gate: pass (no run significantly worse than {comp.baseline} on {on})")
    return EXIT_GATE_FAILED if failures else EXIT_OK


def add_compare_parser(sub: Any) -> None:
    """``rbench compare RUN[:STAGE]...``: its options."""
    c = sub.add_parser(
        "compare",
        help="per-stage, per-metric deltas between stored runs, with paired significance tests",
    )
    c.add_argument(
        "runs",
        nargs="+",
        metavar="RUN[:STAGE]",
        help="run ids (the first is the baseline unless --gate/--baseline names one); "
        "RUN:STAGE compares one stage (e.g. RUN1:bm25 RUN2:rrf)",
    )
    c.add_argument("--baseline", help="the run every other run is compared with")
    c.add_argument("--metric", action="append", help="metric to compare (repeatable)")
    c.add_argument("--stage", action="append", help="only these stages (repeatable)")
    c.add_argument("--subset", default="all", help="e.g. leaks_path=false, dataset=shopapi")
    c.add_argument(
        "--test",
        default="randomisation",
        choices=["randomisation", "t", "wilcoxon", "bootstrap"],
        help="the paired significance test behind p and the marks",
    )
    c.add_argument("--alpha", type=float, default=0.05, help="significance level")
    c.add_argument(
        "--resamples", type=int, default=DEFAULT_RESAMPLES,
        help="resamples of the randomisation/bootstrap tests and the CIs",
    )  # fmt: skip
    c.add_argument("--seed", type=int, default=0, help="random seed of the resampling")
    c.add_argument(
        "--gate",
        metavar="BASELINE",
        help="exit 1 when any run is significantly worse than BASELINE on the gate metric(s)",
    )
    c.add_argument(
        "--gate-metric", action="append", help="metric(s) the gate checks (default: the first)"
    )
    c.add_argument(
        "--allow-different-data", action="store_true",
        help="compare runs whose dataset fingerprints differ (refused by default: the same "
        "query id may be a different question); a warning line says so",
    )  # fmt: skip
    c.add_argument("--json", action="store_true", help="print every row as JSON")
    c.set_defaults(func=cmd_compare)

"""``rbench fit-ltr RUN_ID... --sources A,B --out MODEL`` (docs/stages.md#learning-to-rank).

Fits the ``ltr`` fusion's model file from stored runs (their per-stage TREC
runs and gold files), cross-fitted, and prints the training size, the
out-of-fold selection check against the best input and the coefficients.
An unknown run, too few questions to cross-fit and an ``--out`` that may not be
written (:mod:`retrieval_bench.out_file`: a folder, a missing folder, an input
of the command such as a run's questions file, an existing file without
``--force``) are one-line errors (exit 2), checked before any fitting where
they can be.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import EXIT_OK, command_line, workspace
from retrieval_bench.errors import ConfigError
from retrieval_bench.out_file import FORCE_HELP, OutFile, out_file
from retrieval_bench.store.run_folder import (
    CONFIG_FILE,
    QUERIES_FILE,
    ResultsFileError,
    read_run_config,
)
from retrieval_bench.store.stored_config import StoredConfig


def cmd_fit_ltr(args: argparse.Namespace) -> int:
    from retrieval_bench.rank_fusion.ltr_fit import describe, fit_ltr, load_training, model_text

    run_dirs, out = stored_runs_and_out(args, "fit-ltr")
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    data = load_training(run_dirs, sources, args.split)
    data.query_features = args.query_features
    model = fit_ltr(
        data, folds=args.folds, C=args.C, seed=args.seed, objective=args.objective,
        model=args.model, cross_fit=args.cross_fit,
    )  # fmt: skip
    model.meta["training"]["command"] = command_line(  # how to rebuild the file
        args, "fit-ltr", args.run_ids,
        ("sources", "model", "cross_fit", "folds", "C", "seed", "objective", "split"),
        ("query_features",),
    )  # fmt: skip
    out.write_text(model_text(model))
    return report_model(args, model.meta, describe(model))


def report_model(args: argparse.Namespace, meta: Mapping[str, Any], summary: str) -> int:
    """What a fitting command prints once its model file is written: the summary and
    the file, or with ``--json`` the file and the model's metadata."""
    if args.json:
        print(json.dumps({"model": args.out, **meta}))
    else:
        print(summary)
        print(f"wrote {args.out}")
    return EXIT_OK


def stored_runs_and_out(args: argparse.Namespace, command: str) -> tuple[list[Path], OutFile]:
    """The stored run folders ``args.run_ids`` name (an id in the workspace, or a
    folder) and the checked ``--out`` file, which may be none of their inputs."""
    results = workspace(args).results_dir
    run_dirs = []
    for run_id in args.run_ids:
        run_dir = Path(run_id) if Path(run_id).is_dir() else results / run_id
        if not (run_dir / QUERIES_FILE).exists():
            raise ConfigError(
                f"{command}: {run_id}: no stored run folder with queries.jsonl under {results}"
            )
        run_dirs.append(run_dir)
    inputs = [found for run_dir in run_dirs for found in _run_inputs(run_dir)]
    return run_dirs, out_file(args.out, force=args.force, inputs=inputs)


def _run_inputs(run_dir: Path) -> list[tuple[Path, str]]:
    """The files of a stored run that fit-ltr and fit-functions read, each with its
    role in the messages: ``config.json``, ``queries.jsonl``, the TREC runs, the
    recorded artifacts and the questions and gold functions files of its datasets
    (an unreadable ``config.json`` is left to the loader to report)."""
    run = run_dir.name
    found = [(run_dir / CONFIG_FILE, f"run {run}'s {CONFIG_FILE}"),
             (run_dir / QUERIES_FILE, f"run {run}'s {QUERIES_FILE}")]  # fmt: skip
    found += [(p, f"run {run}'s TREC run {p.relative_to(run_dir)}")
              for p in sorted((run_dir / "runs").glob("*/*.trec"))]  # fmt: skip
    found += [(p, f"run {run}'s artifacts {p.relative_to(run_dir)}")
              for p in sorted((run_dir / "artifacts").glob("*/*.jsonl"))]  # fmt: skip
    try:
        datasets = StoredConfig.from_saved(read_run_config(run_dir)).datasets
    except ResultsFileError:
        datasets = []
    for key, role in (("questions", "questions file"), ("gold_functions", "gold functions file")):
        found += [(Path(p), f"run {run}'s {role}")
                  for d in datasets if isinstance(p := d.get(key), str) and p]  # fmt: skip
    return found


def add_fit_ltr_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    """``rbench fit-ltr RUN_ID... --sources A,B --out MODEL``."""
    f = sub.add_parser(
        "fit-ltr", help="fit the ltr fusion's model file from stored runs (cross-fitted)"
    )
    f.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="stored runs to learn from")
    f.add_argument(
        "--sources", required=True,
        help="comma-separated stage labels whose runs are the features (the ltr fusion's inputs)",
    )  # fmt: skip
    f.add_argument("--out", required=True, metavar="FILE", help="model file to write (JSON)")
    f.add_argument("--force", action="store_true", help=FORCE_HELP)
    f.add_argument("--split", help="learn only from questions of this split (e.g. dev)")
    f.add_argument("--folds", type=positive_int, default=5, help="cross-fitting folds")
    f.add_argument(
        "--model", choices=("logistic", "lambdarank"), default="logistic",
        help="logistic regression, or LambdaMART (LightGBM lambdarank)",
    )  # fmt: skip
    f.add_argument(
        "--cross-fit", choices=("hash", "dataset"), default="hash",
        help="folds by the hash of the question id, or one fold per dataset (repository)",
    )  # fmt: skip
    f.add_argument("--C", type=float, default=1.0, help="inverse L2 strength of the regression")
    f.add_argument("--seed", type=int, default=0, help="random_state of the solver and the test")
    f.add_argument(
        "--objective", default="Acc@5",
        help="metric of the out-of-fold check against the best input (Acc@k, R@10, MRR)",
    )  # fmt: skip
    f.add_argument(
        "--query-features", action="store_true",
        help="add the question-and-path features (path tokens in the question, named stem, test)",
    )  # fmt: skip
    f.add_argument("--json", action="store_true", help="print the training summary as JSON")
    f.set_defaults(func=cmd_fit_ltr)

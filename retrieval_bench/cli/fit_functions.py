"""``rbench fit-functions RUN_ID... --stage LABEL --out MODEL`` (docs/stages.md#function-ranker).

Fits the ``function-ranker`` fusion's model file from the candidate feature rows
its stage recorded in stored runs (``record_features: true``) and the questions'
gold functions, cross-fitted, and prints the training size, what was dropped and
the out-of-fold check against the untrained score. An unknown run, a run
without the stage or its recorded features, too few folds to cross-fit and an
``--out`` that may not be written (:mod:`retrieval_bench.out_file`: a folder, a
missing folder, an input of the command, an existing file without ``--force``)
are one-line errors (exit 2), checked before any fitting where they can be.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from retrieval_bench.cli.common import command_line
from retrieval_bench.dataset_spec import CONVENTIONS, DEFAULT_CONVENTIONS
from retrieval_bench.out_file import FORCE_HELP


def cmd_fit_functions(args: argparse.Namespace) -> int:
    from retrieval_bench.cli.fit_ltr import report_model, stored_runs_and_out
    from retrieval_bench.rank_fusion.function_fit import (
        describe,
        fit_functions,
        load_function_training,
    )

    run_dirs, out = stored_runs_and_out(args, "fit-functions")
    data = load_function_training(
        run_dirs, args.stage, args.exclude_dataset or (), conventions=args.conventions
    )
    model = fit_functions(
        data, cross_fit=args.cross_fit, folds=args.folds, rounds=args.rounds, seed=args.seed
    )
    model.meta["training"]["command"] = command_line(  # how to rebuild the file
        args, "fit-functions", args.run_ids,
        ("stage", "cross_fit", "folds", "rounds", "seed", "conventions", "exclude_dataset"),
    )  # fmt: skip
    out.write_text(json.dumps(model.to_dict(), indent=1) + "\n")
    return report_model(args, model.meta, describe(model))


def add_fit_functions_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    """``rbench fit-functions RUN_ID... --stage LABEL --out MODEL``."""
    f = sub.add_parser(
        "fit-functions",
        help="fit the function-ranker fusion's model file from stored runs (cross-fitted)",
    )
    f.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="stored runs to learn from")
    f.add_argument(
        "--stage", required=True,
        help="label of the function-ranker stage whose recorded features are learned from "
             "(run with record_features: true)",
    )  # fmt: skip
    f.add_argument("--out", required=True, metavar="FILE", help="model file to write (JSON)")
    f.add_argument("--force", action="store_true", help=FORCE_HELP)
    f.add_argument(
        "--cross-fit", choices=("hash", "dataset", "none"), default="hash",
        help="folds by the hash of the question id, one fold model per dataset "
             "(repository), or the full model only",
    )  # fmt: skip
    f.add_argument("--folds", type=positive_int, default=5, help="folds of --cross-fit hash")
    f.add_argument(
        "--exclude-dataset", action="append", metavar="NAME",
        help="leave this dataset's questions out of the training (repeatable)",
    )  # fmt: skip
    f.add_argument("--rounds", type=positive_int, default=200, help="LambdaMART boosting rounds")
    f.add_argument("--seed", type=int, default=0, help="LightGBM's seed")
    f.add_argument(
        "--conventions",
        choices=CONVENTIONS,
        default=DEFAULT_CONVENTIONS,
        help="whose gold functions label the candidates (docs/metrics.md#conventions)",
    )
    f.add_argument("--json", action="store_true", help="print the training summary as JSON")
    f.set_defaults(func=cmd_fit_functions)

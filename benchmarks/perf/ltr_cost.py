"""Cost of the learned rankers (docs/stages.md#learning-to-rank): fitting time and
the per-question cost of scoring, for the logistic model and LambdaMART, against
the cost of building the same question's features (the part both share).

Input: a stored training run of ``benchmarks/configs/ltr-train-nine.yaml``
(``--run``, in ``--workspace``); the 2,368 mined questions of the nine histories.
Timed, in this process and in this order:

* **features**: every question's candidate files and feature rows, from the lifted
  TREC runs and the question's text (``ltr_features.file_features``) — the
  baseline;
* **fit**: ``fit_ltr`` with ``--cross-fit dataset`` (the full model and the nine
  fold models, plus the out-of-fold selection check), logistic and LambdaMART,
  each on the features built above;
* **score**: each full model's ``predict`` over every question's rows, one call
  per question as the ``ltr`` fusion makes it (the model already loaded).

Reported: seconds, ms per question, and the ratios score / features and
LambdaMART fit / logistic fit. The load average is recorded; these are not
tests (docs/architecture.md: speed is measured, never asserted).

Usage::

    python benchmarks/perf/ltr_cost.py --workspace WS --run RUN_ID

writes ``benchmarks/perf/results/ltr_cost.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from perf_common import machine, write_result  # sibling module: the scripts run standalone

from retrieval_bench.rank_fusion.ltr_fit import fit_ltr, load_training

OUT = Path(__file__).resolve().parent / "results" / "ltr_cost.json"
SOURCES = "bm25,bm25-issue,exact-issue,files-whole,files-max,files-issue,graph"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--run", required=True, help="a stored ltr-train-nine run id")
    parser.add_argument("--sources", default=SOURCES)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    load_before = machine()["load_average_1m"]
    data = load_training([args.workspace / "results" / args.run], args.sources.split(","))
    data.query_features = True
    qids = data.query_ids
    t0 = time.perf_counter()
    rows = sum(len(data.features(q)[0]) for q in qids)
    features_s = time.perf_counter() - t0
    result: dict[str, Any] = {
        "run": args.run,
        "questions": len(qids),
        "candidate_rows": rows,
        "sources": data.sources,
        "features_s": round(features_s, 3),
        "features_ms_per_question": round(1000 * features_s / len(qids), 3),
        "models": {},
    }
    for kind in ("logistic", "lambdarank"):
        t0 = time.perf_counter()
        model = fit_ltr(data, objective="R@10", model=kind, cross_fit="dataset")
        fit_s = time.perf_counter() - t0
        model.full.predict(data.features(qids[0])[1])  # loads the booster outside the timing
        t0 = time.perf_counter()
        for q in qids:
            model.full.predict(data.features(q)[1])
        score_s = time.perf_counter() - t0
        result["models"][kind] = {
            "fit_s": round(fit_s, 2),
            "models_fitted": 1 + len(model.folds),
            "score_s": round(score_s, 3),
            "score_ms_per_question": round(1000 * score_s / len(qids), 3),
            "score_vs_features": round(score_s / features_s, 3),
            "out_of_fold_R@10": round(model.meta["selection"]["ltr_out_of_fold"], 4),
        }
    m = result["models"]
    result["fit_lambdarank_vs_logistic"] = round(
        m["lambdarank"]["fit_s"] / m["logistic"]["fit_s"], 2
    )
    result["load_average_1m_before"] = load_before
    write_result(args.out, result)
    print(f"features {result['features_ms_per_question']} ms/question; " + "; ".join(
        f"{k}: fit {v['fit_s']} s ({v['models_fitted']} models), score "
        f"{v['score_ms_per_question']} ms/question ({v['score_vs_features']}x features)"
        for k, v in m.items()
    ))  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Cost of the function ranker (docs/stages.md#function-ranker) per question, beside
the file-level stages it reads, and the share of it that is scoring.

One bundled history (default: the first 60 mined questions of pvlib, each at its
own commit) is run twice in this process with the file-level stages of
``localization.yaml`` and the ``function-ranker`` with the bundled model
(recording its rows): the first pass parses and tokenises every candidate file
(cold), the second finds them in the process's caches (warm), as a run over many
snapshots of one repository mostly does. Then, over the rows the stage recorded,
one ``predict`` call per question of the full LambdaMART model against the
untrained weighted sum: what scoring costs of the stage's time.

Reported: each stage's seconds and ms per question (cold and warm), the function
ranker's over ``files-issue``'s and over all its inputs' together, candidates per
question, scoring ms per question. The load average is recorded; these are not
tests (docs/architecture.md: speed is measured, never asserted).

Usage::

    RBENCH_DATA_ROOT=../shared/data python benchmarks/perf/function_ranker_cost.py \\
        [--history pvlib] [--limit 60]

writes ``benchmarks/perf/results/function_ranker_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from perf_common import machine, write_result  # sibling module: the scripts run standalone

import retrieval_bench as rb
from retrieval_bench.rank_fusion.function_features import default_scores
from retrieval_bench.rank_fusion.function_model import FunctionModel
from retrieval_bench.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "results" / "function_ranker_cost.json"
MODEL = ROOT / "benchmarks" / "models" / "function-ranker.json"
INPUTS = ["files-issue", "bm25-issue", "bm25", "exact-issue", "graph"]
REPOS = {"pvlib": "pvlib/pvlib-python", "dask": "dask/dask", "astroid": "pylint-dev/astroid",
         "pydicom": "pydicom/pydicom", "marshmallow": "marshmallow-code/marshmallow",
         "sqlfluff": "sqlfluff/sqlfluff"}  # fmt: skip


def config(history: str, limit: int) -> dict[str, Any]:
    data_root = Path(os.environ.get("RBENCH_DATA_ROOT") or ROOT.parent / "shared" / "data")
    pairs = ROOT / "benchmarks" / "data" / "history-pairs"
    return {
        "name": "function-ranker-cost",
        "datasets": [
            {
                "name": history,
                "questions": str(pairs / f"{history}.jsonl"),
                "gold_functions": str(pairs / f"{history}.functions.jsonl"),
                "repo": REPOS[history],
                "commit_is": "parent",
                "include": ["*.py"],
                "limit": limit,
            }
        ],  # fmt: skip
        "repos": {REPOS[history]: str(data_root / "repos" / f"{history}.bundle")},
        "chunker": {"name": "ast", "budget": 512},
        "retrievers": [
            {"name": "bm25"},
            {"name": "bm25", "id": "bm25-issue", "query": "issue", "path_boost": 0.5},
            {"name": "exact", "id": "exact-issue", "terms": "issue", "max_terms": 48},
            {
                "name": "bm25-files",
                "id": "files-issue",
                "doc": "chunks",
                "aggregate": "mean",
                "top_m": 3,
                "test_weight": 0,
                "query": "issue",
                "path_boost": 0.5,
            },
        ],  # fmt: skip
        "rerankers": [
            {
                "name": "code-graph",
                "id": "graph",
                "inputs": ["files-issue"],
                "top_n": 3,
                "import_weight": 0.1,
                "issue_weight": 0.1,
                "call_weight": 0.5,
                "test_weight": 0,
            }
        ],  # fmt: skip
        "fusions": [
            {
                "name": "function-ranker",
                "id": "function-ranker",
                "inputs": INPUTS,
                "top_n": 10,
                "model_file": str(MODEL),
                "record_features": True,
            }
        ],  # fmt: skip
        "candidates": 50,
    }


def stage_seconds(result: Any) -> dict[str, float]:
    return {s: round(float(row["seconds"]), 3) for s, row in result.tables["all"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", default="pvlib", choices=sorted(REPOS))
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    load_before = machine()["load_average_1m"]
    cfg = rb.BenchmarkConfig.model_validate(config(args.history, args.limit))
    passes: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as home:
        ws = Workspace(Path(home))
        for name in ("cold", "warm"):
            result = rb.run(cfg, ws)
            passes[name] = stage_seconds(result)
        queries = (result.out_dir / "queries.jsonl").read_text(encoding="utf-8")
        n = len(queries.splitlines())
        art = result.out_dir / "artifacts" / args.history / "function-ranker.jsonl"
        rows = [json.loads(line)["artifact"] for line in art.read_text().splitlines()]
    model = FunctionModel.load(MODEL)
    xs = [np.asarray([v for _, v in r["candidates"]], dtype=np.float64) for r in rows if r]
    xs = [x for x in xs if len(x)]
    names = rows[0]["features"]
    model.full.predict(xs[0])  # loads the booster outside the timing
    t0 = time.perf_counter()
    for x in xs:
        model.full.predict(x)
    model_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for x in xs:
        default_scores(x, names)
    untrained_s = time.perf_counter() - t0
    out: dict[str, Any] = {"history": args.history, "questions": n, "passes": {}}
    for name, secs in passes.items():
        fr, inputs = secs["function-ranker"], sum(secs[s] for s in INPUTS)
        out["passes"][name] = {
            "seconds": secs,
            "ms_per_question": {s: round(1000 * v / n, 2) for s, v in secs.items()},
            "function_ranker_vs_files_issue": round(fr / secs["files-issue"], 2),
            "function_ranker_vs_its_inputs": round(fr / inputs, 3),
        }
    out["candidates_per_question"] = round(float(np.mean([len(x) for x in xs])), 1)
    out["scoring_ms_per_question"] = {
        "lambdamart": round(1000 * model_s / len(xs), 3),
        "untrained": round(1000 * untrained_s / len(xs), 3),
    }
    out["scoring_share_of_warm_stage"] = round(model_s / passes["warm"]["function-ranker"], 3)
    out["load_average_1m_before"] = load_before
    write_result(args.out, out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

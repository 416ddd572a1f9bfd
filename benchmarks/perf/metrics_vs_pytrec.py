"""Speed of our ranking metrics against pytrec_eval (trec_eval in C), same process.

Workload: N queries x D retrieved docs (tie-free random scores), ~5 relevant
documents per query, measures P/recall/ndcg_cut/success at k in KS plus
recip_rank and map. Reported as ratios against pytrec_eval measured in the
same run (no timed assertions in tests: docs/architecture.md#testing-conventions).

    .venv/bin/python benchmarks/perf/metrics_vs_pytrec.py [--queries 10000] [--docs 100]

Also times the harness entry point ``evaluate_stage`` (file, budget, chunk and
line metrics) on a synthetic corpus of the same size, for scale.

Writes benchmarks/perf/results/metrics.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval import ranking as rk
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.types import Chunk, Example, Run, Span

KS = (1, 3, 5, 10, 20, 100)
RESULTS = Path(__file__).parent / "results" / "metrics.json"


def make_data(n_queries: int, n_docs: int, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        docs = [f"src/pkg/mod{q % 97}/file{d}.py:{d * 10}-{d * 10 + 9}" for d in range(n_docs * 2)]
        order = rng.permutation(len(docs))
        scores = rng.permutation(n_docs).astype(float)
        run[f"q{q}"] = {docs[i]: float(s) for i, s in zip(order[:n_docs], scores, strict=True)}
        judged = rng.choice(len(docs), size=10, replace=False)
        qrels[f"q{q}"] = {
            docs[i]: int(rel) for i, rel in zip(judged, [1] * 5 + [0] * 5, strict=True)
        }
    return run, qrels


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def stage_workload(n_queries: int, n_docs: int, seed: int = 1) -> tuple[Run, list, Corpus]:
    """A corpus of 2000 files x 10 chunks; each query retrieves n_docs chunks;
    1-3 gold files; every 5th query also has a gold span."""
    rng = np.random.default_rng(seed)
    chunks = [
        Chunk(f"f{f}.py:{c * 20 + 1}-{c * 20 + 20}:{f:x}{c}", f"f{f}.py", c * 20 + 1,
              c * 20 + 20, "python", "function", None, "", int(rng.integers(50, 600)))
        for f in range(2000)
        for c in range(10)
    ]  # fmt: skip
    ids = [c.id for c in chunks]
    runs: dict[str, dict[str, float]] = {}
    examples = []
    for q in range(n_queries):
        sel = rng.choice(len(ids), n_docs, replace=False)
        runs[f"q{q}"] = {ids[i]: float(s) for i, s in zip(sel, rng.random(n_docs), strict=True)}
        gold = tuple(f"f{g}.py" for g in rng.choice(2000, int(rng.integers(1, 4)), replace=False))
        spans = (Span(gold[0], 5, 30),) if q % 5 == 0 else ()
        examples.append(Example(f"q{q}", "", gold, spans))
    return Run("stage", runs), examples, Corpus(Path("."), chunks)


def ours_from_judged(j: rk.Judged) -> dict[str, np.ndarray]:
    out = {"recip_rank": rk.reciprocal_rank(j), "map": rk.average_precision(j)}
    for k in KS:
        out[f"P_{k}"] = rk.precision(j, k)
        out[f"recall_{k}"] = rk.recall(j, k)
        out[f"ndcg_cut_{k}"] = rk.ndcg(j, k)
        out[f"success_{k}"] = rk.success(j, k)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    run_dict, qrels = make_data(args.queries, args.docs)
    run = Run("bench", run_dict)
    ks = ",".join(map(str, KS))
    measures = {f"P_{ks}", f"recall_{ks}", f"ndcg_cut_{ks}", f"success_{ks}", "recip_rank", "map"}

    t_build, ev = best_of(lambda: pytrec_eval.RelevanceEvaluator(qrels, measures), args.repeat)
    t_eval, ref = best_of(lambda: ev.evaluate(run_dict), args.repeat)
    t_pytrec_total = t_build + t_eval

    t_judge, (qids, judged) = best_of(lambda: rk.judge_run(run, qrels), args.repeat)
    t_metrics, ours = best_of(lambda: ours_from_judged(judged), args.repeat)
    t_ours_total = t_judge + t_metrics

    stage_run, examples, corpus = stage_workload(args.queries, args.docs)
    t_stage, sm = best_of(
        lambda: evaluate_stage(
            stage_run, examples, corpus, ks=(1, 3, 5, 10), budgets=(8000, 13000, 27000)
        ),
        args.repeat,
    )

    # sanity: identical numbers
    worst = max(abs(float(ours[m][i]) - ref[q][m]) for i, q in enumerate(qids[:500]) for m in ours)

    result = {
        "workload": {"queries": args.queries, "docs_per_query": args.docs, "ks": list(KS)},
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "platform": platform.platform(),
        "seconds": {
            "pytrec_build": t_build,
            "pytrec_evaluate": t_eval,
            "pytrec_total": t_pytrec_total,
            "ours_rank_and_judge": t_judge,
            "ours_metrics": t_metrics,
            "ours_total": t_ours_total,
            "evaluate_stage": t_stage,
        },
        "ratios": {
            "ours_total / pytrec_total": t_ours_total / t_pytrec_total,
            "ours_total / pytrec_evaluate": t_ours_total / t_eval,
            "ours_metrics / pytrec_evaluate": t_metrics / t_eval,
            "evaluate_stage / pytrec_total": t_stage / t_pytrec_total,
        },
        "evaluate_stage": {
            "metrics_per_query": len(sm.means),
            "ks": [1, 3, 5, 10],
            "budgets": [8000, 13000, 27000],
            "note": "file + budget metrics for all queries, chunk + line metrics for 1 in 5",
        },
        "max_abs_diff_first_500_queries": worst,
        "repeat": args.repeat,
        "timing": "best of repeat",
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    s = result["seconds"]
    print(f"{args.queries} queries x {args.docs} docs, best of {args.repeat}")
    for name, sec in s.items():
        print(f"  {name:<22} {sec * 1000:9.1f} ms")
    for name, r in result["ratios"].items():
        print(f"  {name:<32} {r:6.2f}x")
    print(f"  max |ours - pytrec_eval| = {worst:.2e}  → {RESULTS}")
    assert worst < 1e-9, worst


if __name__ == "__main__":
    main()

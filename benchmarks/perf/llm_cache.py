"""Cold vs cached run time of the same LLM benchmark, in one process.

Runs a small benchmark with LLM stages (HyDE + the logprob reranker on the
shopapi fixture) twice against the real local model server: first with an
empty model-response cache, then again (every call served from the cache).
The embedding cache is warmed beforehand so the ratio isolates the model
calls. Writes benchmarks/perf/results/llm_cache.json.

    python benchmarks/perf/llm_cache.py [--questions 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

from retrieval_bench.config import parse_config
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.llm.local_server import LocalServer
from retrieval_bench.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "llm_cache.json"


def config(base_url: str, n: int, llm_stages: bool) -> object:
    fixture = ROOT / "fixtures" / "repos" / "shopapi"
    retrievers: list[dict[str, object]] = [{"name": "bm25"}]
    rerankers: list[dict[str, object]] = []
    if llm_stages:
        retrievers.append({"name": "hyde", "rung": "language", "max_tokens": 96})
        rerankers.append({"name": "llm-logprob", "max_candidates": 10, "snippet_chars": 500})
    return parse_config(
        {
            "name": "perf-llm-cache",
            "datasets": [
                {
                    "name": "shopapi",
                    "questions": str(fixture / "questions.jsonl"),
                    "snapshot": str(fixture),
                    "limit": n,
                }
            ],
            "retrievers": retrievers,
            "fusions": [{"name": "rrf"}],
            "rerankers": rerankers,
            "llm": {"base_url": base_url},
            "table_k": 5,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RBENCH_CACHE"] = str(Path(tmp) / "cache")
        server = LocalServer(Workspace(Path(tmp) / "srv"))
        state = server.start()
        try:
            # warm the chunk index and the embedding cache (no model calls)
            run_benchmark(config(state.base_url, args.questions, False), Workspace(Path(tmp) / "w"))
            timings, calls = [], []
            for _ in range(2):
                t0 = time.perf_counter()
                res = run_benchmark(
                    config(state.base_url, args.questions, True), Workspace(Path(tmp) / "w")
                )
                timings.append(time.perf_counter() - t0)
                calls.append(sum(s.llm_calls for o in res.outcomes for s in o.stages))
        finally:
            server.stop()
    cold, cached = timings
    result = {
        "benchmark": "llm_cache",
        "questions": args.questions,
        "stages": ["bm25", "hyde(language)", "rrf", "llm-logprob(10 candidates)"],
        "model": "SmolLM2-135M-Instruct Q4_1 via llama-cpp-python server",
        "cold_s": round(cold, 3),
        "cached_s": round(cached, 3),
        "model_calls": {"cold": calls[0], "cached": calls[1]},
        "cached_over_cold": round(cached / cold, 4),
    }
    write_result(RESULTS, result)
    print(
        f"cold {cold:.1f}s ({calls[0]} model calls)  cached {cached:.2f}s ({calls[1]} calls)"
        f"  cached/cold = {cached / cold:.4f}  -> {RESULTS}"
    )


if __name__ == "__main__":
    main()

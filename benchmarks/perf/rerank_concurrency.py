"""Reranker model calls per second with client concurrency 1 vs N, in one process.

The same yes/no reranking requests (real candidates from the shopapi fixture,
cache disabled so every call reaches the model) are sent through the LLM
client with ``concurrency=1`` and ``concurrency=N`` to the real local server.
llama-cpp-python's server answers one request at a time, so the ratio shows
what client-side concurrency buys against it (against a batching server such
as vLLM or llama.cpp's ``llama-server -np 4`` it would be larger).
Writes benchmarks/perf/results/rerank_concurrency.json.

    python benchmarks/perf/rerank_concurrency.py [--calls 40] [--n 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

from retrieval_bench.llm.base import chat_request
from retrieval_bench.llm.client import LLMClient
from retrieval_bench.llm.local_server import LocalServer
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "rerank_concurrency.json"


def requests(n: int) -> list:  # type: ignore[type-arg]
    files = sorted((ROOT / "fixtures" / "repos" / "shopapi" / "src").rglob("*.py"))
    out = []
    for i in range(n):
        path = files[i % len(files)]
        snippet = path.read_text()[:500]
        out.append(
            chat_request(
                f"Question: where are auth tokens verified?\nFile: {path.name}\n{snippet}\n"
                "Is this snippet relevant to answering the question? Answer Yes or No.",
                max_tokens=1,
                top_logprobs=5,
                repeat=i,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--n", type=int, default=4)
    args = parser.parse_args()
    reqs = requests(args.calls)
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalServer(Workspace(Path(tmp)))
        state = server.start()
        try:
            rates = {}
            for conc in (1, args.n):
                client = LLMClient(LLMSpec(base_url=state.base_url, concurrency=conc))
                client.chat_many(reqs[:2])  # warm-up
                t0 = time.perf_counter()
                outs = client.chat_many(reqs)
                dt = time.perf_counter() - t0
                assert not any(isinstance(o, Exception) for o in outs), outs
                rates[conc] = args.calls / dt
        finally:
            server.stop()
    result = {
        "benchmark": "rerank_concurrency",
        "calls": args.calls,
        "calls_per_s": {f"concurrency_{c}": round(r, 2) for c, r in rates.items()},
        "ratio_n_over_1": round(rates[args.n] / rates[1], 3),
        "server": "llama-cpp-python 0.3.36 server (one request at a time), SmolLM2-135M Q4_1",
    }
    write_result(RESULTS, result)
    print(
        f"yes/no calls/s: concurrency 1 = {rates[1]:.2f}, concurrency {args.n} = "
        f"{rates[args.n]:.2f}  (ratio {rates[args.n] / rates[1]:.2f}) -> {RESULTS}"
    )


if __name__ == "__main__":
    main()

"""Speed of our BM25Retriever (bm25s inside) against rank_bm25.BM25Okapi.

Both index the *same* pre-tokenised corpus (our code tokens of 40-line windows
of a real codebase) and answer the same queries; the baseline is measured in
the same run, and results are reported as ratios (perf lives in benchmarks/perf,
never as timed assertions in tests: docs/architecture.md#testing-conventions).

Corpus: pytest 7.4.0's sdist if ``/work/shared/data/devsets/sdists`` has it
(unpacked to a temp folder), else the ``.py`` files of this interpreter's
site-packages in sorted path order, up to ``--max-chunks`` windows.
Queries: the pytest devset questions (real change descriptions), repeated if
needed to reach ``--queries``.

Timed: index build (ours: vocabulary + bm25s index from token lists; theirs:
``BM25Okapi(docs)``), and per-query top-10 — ours through the public
``search()`` (query tokenisation and tie-broken top-k included); theirs is
``get_scores`` + ``argsort`` on queries tokenised beforehand (favouring it).

Usage: ``python benchmarks/perf/bm25_vs_rank_bm25.py [--max-chunks N] [--queries N]``
writes ``benchmarks/perf/results/bm25.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sysconfig
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import bm25s
import numpy as np
import rank_bm25
from perf_common import (  # sibling module: the scripts run standalone
    DEVSETS,
    WINDOW,
    python_windows,
    write_result,
)

from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer

RESULTS = Path(__file__).resolve().parent / "results" / "bm25.json"


def _source_root(tmp: Path) -> tuple[Path, str]:
    sdist = DEVSETS / "sdists" / "pytest-7.4.0.tar.gz"
    if sdist.is_file():
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        return tmp / "pytest-7.4.0", "pytest-7.4.0 sdist"
    return Path(sysconfig.get_paths()["purelib"]), "site-packages .py files"


def _queries(n: int) -> list[str]:
    path = DEVSETS / "pytest-7.4.0.jsonl"
    texts = [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]
    return [texts[i % len(texts)] for i in range(n)]


def _retained_bytes(build: Callable[[], object]) -> int:
    """Bytes allocated by ``build`` and still held by what it returns."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return after - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root, source = _source_root(Path(tmp))
        windows = [(c.id, c.text) for c in python_windows(root, args.max_chunks)]
    tokenizer = CodeTokenizer()
    t0 = time.perf_counter()
    docs = tokenizer.tokenize_many(text for _, text in windows)
    tokenize_s = time.perf_counter() - t0
    ids = [cid for cid, _ in windows]
    queries = {f"q{i}": q for i, q in enumerate(_queries(args.queries))}
    query_tokens = [tokenizer(q) for q in queries.values()]

    ours = BM25Retriever(tokenizer=tokenizer, include_path=False)
    t0 = time.perf_counter()
    ours.index_tokens(ids, docs)
    ours_index_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = rank_bm25.BM25Okapi(docs)
    ref_index_s = time.perf_counter() - t0

    ours.search(dict(list(queries.items())[:5]), args.k)  # warm-up
    t0 = time.perf_counter()
    run = ours.search(queries, args.k)
    ours_query_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in query_tokens:
        np.argsort(-ref.get_scores(q), kind="stable")[: args.k]
    ref_query_s = time.perf_counter() - t0

    # memory, in a separate pass (tracemalloc slows allocation, so not timed):
    # bytes still held once the index is built (numpy reports to tracemalloc)
    del ours, ref

    def build_ours() -> BM25Retriever:
        retriever = BM25Retriever(tokenizer=tokenizer, include_path=False)
        retriever.index_tokens(ids, docs)
        return retriever

    ours_mem = _retained_bytes(build_ours)
    ref_mem = _retained_bytes(lambda: rank_bm25.BM25Okapi(docs))

    n_q = len(queries)
    speedup = round(ref_query_s / ours_query_s, 2)
    index_ratio = round(ours_index_s / ref_index_s, 2)
    result = {
        "benchmark": "bm25_vs_rank_bm25",
        "corpus": {
            "source": source,
            "chunks": len(docs),
            "window_lines": WINDOW,
            "tokens": int(sum(len(d) for d in docs)),
            "vocabulary": len({t for d in docs for t in d}),
            "tokenize_s": round(tokenize_s, 3),
        },
        "queries": n_q,
        "k": args.k,
        "ours": {
            "impl": f"BM25Retriever (bm25s {bm25s.__version__}, method=lucene, numpy backend)",
            "index_s": round(ours_index_s, 4),
            "queries_per_s": round(n_q / ours_query_s, 1),
            "ms_per_query": round(1000 * ours_query_s / n_q, 3),
        },
        "baseline": {
            "impl": "rank_bm25 0.2.2 BM25Okapi (queries pre-tokenised)",
            "index_s": round(ref_index_s, 4),
            "queries_per_s": round(n_q / ref_query_s, 1),
            "ms_per_query": round(1000 * ref_query_s / n_q, 3),
        },
        "memory_bytes": {"ours_index": ours_mem, "baseline_index": ref_mem},
        "ratios": {
            "query_throughput_ours_over_baseline": speedup,
            "index_time_ours_over_baseline": index_ratio,
            "index_memory_ours_over_baseline": round(ours_mem / max(ref_mem, 1), 3),
        },
        "non_empty_results": sum(1 for q in queries if run.scores[q]),
    }
    write_result(args.out, result)
    print(
        f"{len(docs)} chunks ({source}), {n_q} queries, k={args.k}\n"
        f"index: ours {ours_index_s:.3f}s  rank_bm25 {ref_index_s:.3f}s  "
        f"(ours/theirs {index_ratio}x)\n"
        f"query: ours {n_q / ours_query_s:.1f} q/s  rank_bm25 {n_q / ref_query_s:.1f} q/s  "
        f"(ours/theirs throughput {speedup}x)\n"
        f"index memory: ours {ours_mem / 2**20:.1f} MiB  rank_bm25 {ref_mem / 2**20:.1f} MiB\n"
        f"wrote {args.out}"
    )


if __name__ == "__main__":
    main()

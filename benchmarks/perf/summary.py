"""Print the headline ratio of every perf result in benchmarks/perf/results/.

Each perf script measures our code against a baseline in the same process and
writes a JSON file; this collects the ratios into one table:

    python benchmarks/perf/summary.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

# file → [(label, path into the JSON)]
HEADLINES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "chunking.json": [
        ("AST chunking time / raw tree-sitter parse time", ("ratio_chunk_to_parse",)),
        ("AST chunking throughput (MB/s)", ("chunk", "mb_per_s")),
    ],
    "embedding_throughput.json": [
        ("index build time / bare model.encode time", ("overhead_ratio",)),
        ("index build throughput (texts/s)", ("build_texts_per_s",)),
        ("peak RSS after index build / after bare encode", ("peak_rss_build_over_bare",)),
    ],
    "update_vs_build.json": [
        ("update after touching one file / cold full build", ("update_over_cold_build",)),
        ("warm full build / cold full build", ("warm_build_over_cold_build",)),
    ],
    "bm25.json": [
        ("BM25 queries/s: ours / rank_bm25", ("ratios", "query_throughput_ours_over_baseline")),
        ("BM25 index time: ours / rank_bm25", ("ratios", "index_time_ours_over_baseline")),
        ("BM25 index memory: ours / rank_bm25", ("ratios", "index_memory_ours_over_baseline")),
    ],
    "fuzzy.json": [
        ("fuzzy recall on one-typo queries / bm25", ("ratios", "typo_recall_fuzzy_over_bm25")),
        ("fuzzy p50 latency / bm25", ("ratios", "latency_p50_fuzzy_over_bm25")),
    ],
    "llm_cache.json": [
        ("LLM benchmark: cached run time / cold run time", ("cached_over_cold",)),
    ],
    "rerank_concurrency.json": [
        ("reranker calls/s: concurrency N / concurrency 1", ("ratio_n_over_1",)),
    ],
    "text_metrics.json": [
        (
            "sentence BLEU samples/s: ours / sacrebleu",
            ("results", "sentence_bleu_vs_function", "speed_ratio_ours_over_baseline"),
        ),
        (
            "corpus BLEU speed: ours / sacrebleu",
            ("results", "corpus_bleu", "speed_ratio_ours_over_baseline"),
        ),
        (
            "ROUGE-L samples/s: ours / rouge-score",
            ("results", "rougeL", "speed_ratio_ours_over_baseline"),
        ),
    ],
    "stats.json": [
        ("randomisation test time: ours / scipy", ("ratios", "randomisation: ours / scipy time")),
        (
            "bootstrap CI (BCa) time: ours / scipy",
            ("ratios", "bootstrap_ci_bca: ours / scipy time"),
        ),
        (
            "randomisation peak memory: ours / scipy",
            ("ratios", "randomisation: ours / scipy peak memory"),
        ),
    ],
    "many_snapshots_sqlfluff.json": [
        ("sqlfluff: 50 snapshots / one cold (all stages)", ("ratios", "shared_over_one_cold")),
        (
            "sqlfluff: an extra snapshot / one cold",
            ("ratios", "extra_snapshot_over_one_cold"),
        ),
    ],
    "vs_whole_file_bm25.json": [
        (
            "pipeline / whole-file bm25s, swebench-lite-dev",
            ("workloads", "swebench-lite-dev", "summary", "ratio"),
        ),
        (
            "pipeline / whole-file bm25s, 30 far-apart sqlfluff snapshots",
            ("workloads", "sqlfluff-far", "summary", "ratio"),
        ),
    ],
    "onnx_vs_torch.json": [
        ("embedding texts/s: onnx / torch", ("throughput", "speedup_vs_torch", "onnx")),
        ("embedding texts/s: onnx-int8 / torch", ("throughput", "speedup_vs_torch", "onnx-int8")),
    ],
    "metrics.json": [
        ("ranking metrics time: ours / pytrec_eval", ("ratios", "ours_total / pytrec_total")),
    ],
}


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def main() -> int:
    rows: list[tuple[str, str]] = []
    for name, items in HEADLINES.items():
        file = RESULTS / name
        data = json.loads(file.read_text()) if file.is_file() else None
        for label, path in items:
            value = _dig(data, path) if data is not None else None
            rows.append((label, "not run" if value is None else f"{value:g}"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Throughput of ``cross_similarity`` and ``cosine`` vs the bare model forward pass
(docs/metrics.md#code-suggestion-similarity).

A batch of ``score_samples`` splits every block into segments, embeds each
distinct segment once in one embedder call, then builds two matrices per
sample and takes their singular values. The floor is the model alone: the
same distinct segments (or whole blocks, for ``cosine``) through
sentence-transformers ``encode``. The ratio

    overhead = score_samples seconds / bare ``encode`` seconds

says what the metric adds on top of the forward pass (1.0 = nothing). The
parts are reported too: segmentation alone, and ``score_samples`` with
precomputed vectors (segmentation + lookups + the SVDs: all the work but the
forward pass), whence ``overhead_ratio_from_parts = (bare + that) / bare``,
which a busy machine disturbs far less than the end-to-end ratio. Both sides
run in one process after a warm-up, without an embedding cache, interleaved,
best of ``--repeats``; the 1-minute load average is recorded because the
machine may be shared.

Pairs: the first ``--pairs`` (default 500) of the study's
``benchmarks/studies/data/code_similarity_pairs.jsonl`` (real functions of
``fixtures/repos/shopapi`` and their transformations; run the study with
``--rebuild`` to regenerate it).

Usage: ``python benchmarks/perf/code_similarity_throughput.py [--pairs N] [--repeats N]
[--threads N] [--no-cosine]`` writes ``benchmarks/perf/results/code_similarity.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
from perf_common import write_result

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.index.embed import SentenceTransformerEmbedder
from retrieval_bench.metrics.answer.code_segments import SEGMENT_MODES, SegmentBy, segments
from retrieval_bench.metrics.answer.code_similarity import CosineSimilarity, CrossSimilarity

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "benchmarks" / "studies" / "data" / "code_similarity_pairs.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "code_similarity.json"


class Precomputed:
    """An embedder answering from vectors computed beforehand: scoring cost only."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.name = "precomputed"
        self.vectors = vectors
        self.dim = len(next(iter(vectors.values())))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def best_of(repeats: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), times


def load_samples(n: int) -> list[Sample]:
    if not PAIRS.exists():
        raise SystemExit(f"{PAIRS} missing; run benchmarks/studies/code_similarity_study.py")
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]
    return [
        Sample(r["prediction"], (r["reference"],), meta={"language": "python"}) for r in rows[:n]
    ]


Metric: TypeAlias = CrossSimilarity | CosineSimilarity


def measure(
    name: str,
    make: Callable[[Any], Metric],
    units: list[str],
    samples: list[Sample],
    model: SentenceTransformerEmbedder,
    repeats: int,
    split: Callable[[], object] | None,
) -> dict[str, Any]:
    """Bare ``encode`` of ``units`` vs ``make(model).score_samples``; plus scoring alone."""

    def bare() -> object:
        return model.model.encode(
            units,
            batch_size=model.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

    metric = make(model)
    all_bare, all_metric = [], []
    for _ in range(repeats):  # interleaved, so a busy spell on a shared machine hits both
        all_bare.append(best_of(1, bare)[0])
        all_metric.append(best_of(1, lambda: metric.score_samples(samples))[0])
    bare_s, metric_s = min(all_bare), min(all_metric)
    scorer = make(Precomputed(dict(zip(units, model.embed(units), strict=True))))
    scoring_s, _ = best_of(repeats, lambda: scorer.score_samples(samples))
    out: dict[str, Any] = {
        "distinct_units": len(units),
        "bare_encode_s": round(bare_s, 3),
        "score_samples_s": round(metric_s, 3),
        "overhead_ratio": round(metric_s / bare_s, 3),
        "scoring_only_s": round(scoring_s, 3),
        # CPU work besides the forward pass, from the precomputed-vector run: a steadier
        # estimate of the overhead than the end-to-end ratio on a busy machine
        "overhead_ratio_from_parts": round((bare_s + scoring_s) / bare_s, 3),
        "all_bare_s": [round(t, 3) for t in all_bare],
        "all_score_samples_s": [round(t, 3) for t in all_metric],
    }
    if split is not None:
        out["segmentation_s"] = round(best_of(repeats, split)[0], 3)
    print(
        f"{name:24}{len(units):>8}{bare_s:>10.2f}{metric_s:>10.2f}{metric_s / bare_s:>10.3f}"
        f"{scoring_s:>10.3f}"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--no-cosine", action="store_true", help="skip the whole-block metric")
    args = parser.parse_args()

    samples = load_samples(args.pairs)
    model = SentenceTransformerEmbedder(threads=args.threads)
    model.embed(["warm up"] * 32)  # load the model and allocate before timing
    blocks = [b for s in samples for b in (s.prediction, *s.references)]
    print(f"{len(samples)} pairs; seconds, best of {args.repeats}")
    print(f"{'metric':24}{'units':>8}{'bare':>10}{'metric':>10}{'ratio':>10}{'scoring':>10}")
    results: dict[str, Any] = {}
    for by in SEGMENT_MODES:

        def split(by: SegmentBy = by) -> list[list[str]]:
            return [segments(b, by, "python") for b in blocks]

        def make(embedder: Any, by: SegmentBy = by) -> Metric:
            return CrossSimilarity(by=by, language="python", embedder=embedder)

        units = list(dict.fromkeys(u for us in split() for u in us))
        results[f"cross_similarity_{by}"] = measure(
            f"cross_similarity {by}", make, units, samples, model, args.repeats, split
        )
    if not args.no_cosine:
        units = list(dict.fromkeys(b for b in blocks if b.strip()))
        results["cosine"] = measure(
            "cosine",
            lambda e: CosineSimilarity(embedder=e),
            units,
            samples,
            model,
            args.repeats,
            None,
        )

    import sentence_transformers
    import torch

    write_result(
        RESULTS,
        {
            "benchmark": "code_similarity_throughput",
            "pairs": len(samples),
            "model": model.name,
            "batch_size": model.batch_size,
            "torch_threads": torch.get_num_threads(),
            "repeats": args.repeats,
            "results": results,
            "versions": {
                "torch": torch.__version__,
                "sentence_transformers": sentence_transformers.__version__,
            },
        },
    )
    print(f"-> {RESULTS}")


if __name__ == "__main__":
    main()

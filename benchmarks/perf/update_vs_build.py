"""Incremental ``update`` after touching one file, against a full ``build``
(docs/architecture.md#caches).

``update`` re-processes only changed, added and removed files; this measures
what that buys. In one process, on a copy of the corpus in a temp folder:

1. full ``build`` with a cold (empty) embedding cache — the baseline;
2. append a line to one source file, then ``update``;
3. for reference, a full ``build`` again with the now-warm cache (what a
   rebuild costs when every text is already cached).

Reported: seconds for each, texts embedded, and the ratio
``update / cold build`` (lower is better). The model is loaded and warmed up
before any timing.

Corpus: the fixture repositories under ``fixtures/repos`` copied side by side
into one repository (else a generated repository of ~2000 functions);
chunker ``ast`` (else ``window``).

Usage: ``python benchmarks/perf/update_vs_build.py [--threads N]``
writes ``benchmarks/perf/results/update_vs_build.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from retrieval_bench.index.build_stats import BuildStats
from retrieval_bench.index.embed import (
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
)
from retrieval_bench.index.store import CodebaseIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embedding_throughput import FIXTURES, generated_repo, make_chunker  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "update_vs_build.json"


def make_repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    if FIXTURES.is_dir() and any(FIXTURES.iterdir()):
        for sub in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
            shutil.copytree(sub, repo / sub.name)
        return repo, "fixtures/repos (copied into one repository)"
    return generated_repo(repo), "generated (~2000 functions)"


def touch_one(repo: Path) -> str:
    """Append a comment to the largest Python file (a content change, new sha256)."""
    files = sorted(repo.rglob("*.py"), key=lambda p: (-p.stat().st_size, str(p)))
    target = files[0] if files else sorted(p for p in repo.rglob("*") if p.is_file())[0]
    with target.open("a", encoding="utf-8") as fh:
        fh.write("\n# touched by update_vs_build\n")
    return target.relative_to(repo).as_posix()


def row(label: str, stats: BuildStats) -> str:
    return (
        f"{label:28}{stats.seconds:>9.2f}{stats.files_changed + stats.files_added:>9}"
        f"{stats.texts_embedded:>10}{stats.chunks:>8}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    model = SentenceTransformerEmbedder(batch_size=args.batch_size, threads=args.threads)
    model.embed(["warm up the model"] * 8)
    chunker = make_chunker()
    with tempfile.TemporaryDirectory(prefix="rbench-perf-") as tmp_str:
        tmp = Path(tmp_str)
        repo, source = make_repo(tmp)
        cache = EmbeddingCache.in_dir(tmp / "cache")
        cached = CachedEmbedder(model, cache)
        index = CodebaseIndex(tmp / "lance", "perf", chunker, cached)

        build = index.build(repo)
        build_misses = cached.misses
        touched = touch_one(repo)
        cached.reset_counters()
        update = index.update(repo)
        update_misses = cached.misses
        warm_index = CodebaseIndex(tmp / "lance", "perf_warm", chunker, cached)
        cached.reset_counters()
        warm = warm_index.build(repo)
        warm_misses = cached.misses
        cache.close()

    import torch

    result = {
        "benchmark": "update_vs_build",
        "corpus": source,
        "chunker": {"name": chunker.name, "config": chunker.config()},
        "model": model.name,
        "files": build.files,
        "chunks": build.chunks,
        "touched_file": touched,
        "cold_build_s": round(build.seconds, 3),
        "update_s": round(update.seconds, 3),
        "warm_build_s": round(warm.seconds, 3),
        "update_over_cold_build": round(update.seconds / build.seconds, 4),
        "warm_build_over_cold_build": round(warm.seconds / build.seconds, 4),
        "texts_embedded": {"cold_build": build.texts_embedded, "update": update.texts_embedded},
        "model_calls_texts": {
            "cold_build": build_misses,
            "update": update_misses,
            "warm_build": warm_misses,
        },
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"corpus: {source}; {build.files} files, {build.chunks} chunks; touched {touched}")
    print(f"{'':28}{'seconds':>9}{'files':>9}{'embedded':>10}{'chunks':>8}")
    print(row("full build (cold cache)", build))
    print(row("update (one file touched)", update))
    print(row("full build (warm cache)", warm))
    print(f"update / cold build: {update.seconds / build.seconds:.4f}   -> {RESULTS}")


if __name__ == "__main__":
    main()

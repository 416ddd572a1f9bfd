"""Embedding throughput of a full index build against the bare model forward pass
(docs/architecture.md#caches).

A :class:`CodebaseIndex` build walks the files, chunks them, looks each text
up in the embedding cache, embeds the misses in batches and writes a LanceDB
table. The model's ``encode`` is the floor; the ratio

    overhead = build seconds / bare ``encode`` seconds on the same texts

says how much the pipeline adds on top of the forward pass (1.0 = nothing).
Both are measured in the same process after a warm-up, so model loading is
excluded from both; the build starts with a cold (empty) embedding cache so
that every text reaches the model, exactly as the bare pass does. Best of
``--repeats`` for each.

Corpus: the fixture repositories under ``fixtures/repos`` (chunked by the
``ast`` chunker, else ``window``), or — when absent — a generated repository
of ~2000 code-like functions.

Usage: ``python benchmarks/perf/embedding_throughput.py [--threads N] [--repeats N]
[--device cpu|cuda|auto]`` writes ``benchmarks/perf/results/embedding_throughput.json``
(``embedding_throughput_cuda.json`` when it ran on a GPU, so both sit side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.chunker import chunk_tree
from retrieval_bench.index.embed import (
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
)
from retrieval_bench.index.store import CodebaseIndex

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "repos"
RESULTS = Path(__file__).resolve().parent / "results" / "embedding_throughput.json"


def generated_repo(folder: Path, n_texts: int = 2000) -> Path:
    """A repository of ``n_texts`` small, distinct Python functions in 100 files."""
    verbs = ["parse", "load", "save", "render", "compute", "validate", "send", "merge"]
    nouns = ["order", "user", "invoice", "cart", "config", "token", "report", "session"]
    per_file = max(1, n_texts // 100)
    for f in range(100):
        funcs = []
        for j in range(per_file):
            i = f * per_file + j
            v, n = verbs[i % len(verbs)], nouns[(i // len(verbs)) % len(nouns)]
            funcs.append(
                f"def {v}_{n}_{i}(data, limit={i % 50}):\n"
                f'    """{v.title()} the {n} #{i} and return the result."""\n'
                f"    items = [x for x in data if x.get('{n}_id') == {i}]\n"
                f"    return items[:limit]\n"
            )
        path = folder / f"pkg{f // 10}" / f"mod{f}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(funcs), encoding="utf-8")
    return folder


def corpus_roots(tmp: Path) -> tuple[list[Path], str]:
    if FIXTURES.is_dir() and any(FIXTURES.iterdir()):
        return sorted(p for p in FIXTURES.iterdir() if p.is_dir()), "fixtures/repos"
    return [generated_repo(tmp / "generated")], "generated (~2000 functions)"


def make_chunker() -> Any:
    for name in ("ast", "window"):
        try:
            return registry.create("chunkers", name)
        except Exception:  # chunker unavailable: try the next rung
            continue
    raise SystemExit("no chunker available (ast or window)")


def _peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--device", default="auto", help="cpu, cuda, cuda:N or auto (a GPU when torch sees one)"
    )
    args = parser.parse_args()

    model = SentenceTransformerEmbedder(
        batch_size=args.batch_size, threads=args.threads, device=args.device
    )
    chunker = make_chunker()
    with tempfile.TemporaryDirectory(prefix="rbench-perf-") as tmp_str:
        tmp = Path(tmp_str)
        roots, source = corpus_roots(tmp)
        texts = list(dict.fromkeys(c.text for r in roots for c in chunk_tree(r, chunker)))
        model.embed(texts[:32])  # warm-up: load the model, first-call allocations

        bare: list[float] = []
        builds: list[float] = []
        embedded = 0
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            model.model.encode(
                texts,
                batch_size=args.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            bare.append(time.perf_counter() - t0)
            rss_after_bare = _peak_rss_mib()

            work = tmp / f"run{rep}"
            cache = EmbeddingCache.in_dir(work / "cache")  # cold cache: all texts are misses
            cached = CachedEmbedder(model, cache)
            t0 = time.perf_counter()
            for i, root in enumerate(roots):
                CodebaseIndex(work / "lance", f"repo{i}", chunker, cached).build(root)
            builds.append(time.perf_counter() - t0)
            rss_after_build = _peak_rss_mib()
            embedded = cached.misses
            cache.close()
            shutil.rmtree(work, ignore_errors=True)

    import sentence_transformers
    import torch

    bare_s, build_s = min(bare), min(builds)
    result = {
        "benchmark": "embedding_throughput",
        "corpus": source,
        "repos": len(roots),
        "chunker": {"name": chunker.name, "config": chunker.config()},
        "model": model.name,
        "texts": len(texts),
        "texts_embedded_by_build": embedded,
        "bare_encode_s": round(bare_s, 3),
        "build_s": round(build_s, 3),
        "bare_texts_per_s": round(len(texts) / bare_s, 1),
        "build_texts_per_s": round(len(texts) / build_s, 1),
        "overhead_ratio": round(build_s / bare_s, 3),
        # peak RSS is monotonic: the first figure is the model + bare encode, the
        # second adds what the index build (chunks, Arrow tables, LanceDB) needed on top
        "peak_rss_mib": {"after_bare_encode": rss_after_bare, "after_build": rss_after_build},
        "peak_rss_build_over_bare": round(rss_after_build / rss_after_bare, 3),
        "all_bare_s": [round(x, 3) for x in bare],
        "all_build_s": [round(x, 3) for x in builds],
        "batch_size": args.batch_size,
        "device": model.resolved_device,
        "gpu": torch.cuda.get_device_name(0)
        if str(model.resolved_device).startswith("cuda")
        else None,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
        },
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = (
        RESULTS
        if model.resolved_device == "cpu"
        else RESULTS.with_name(
            f"embedding_throughput_{str(model.resolved_device).replace(':', '')}.json"
        )
    )
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(
        f"corpus: {source}, {len(texts)} unique texts, chunker {chunker.name}, "
        f"device {model.resolved_device}"
    )
    print(f"{'':22}{'seconds':>10}{'texts/s':>10}")
    print(f"{'bare model.encode':22}{bare_s:>10.2f}{len(texts) / bare_s:>10.1f}")
    print(f"{'full index build':22}{build_s:>10.2f}{len(texts) / build_s:>10.1f}")
    print(f"overhead ratio (build / bare): {build_s / bare_s:.3f}   -> {out}")


if __name__ == "__main__":
    main()

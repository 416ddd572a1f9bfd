"""Inference cost of the shipped ``fit-dense`` model against its base, both ONNX int8
(docs/stages.md#fit-dense): texts per second on the same code chunks, in one process.

Texts: the ``ast`` chunks of this project's own ``retrieval_bench/`` package (the first
``--texts``), embedded as each model wants them: the base model the chunk's text, the
trained model ``"<path>\\n<text>"`` (its manifest's ``document_path``). Both are loaded
and warmed first (the base model's export, once into a temp folder, is not timed);
then each embeds all texts ``--repeats`` times, interleaved, and the median is kept::

    ratio = trained texts/s / base texts/s      (same chunks, same process)

Usage: ``python benchmarks/perf/trained_dense_cost.py [--texts 400] [--repeats 3]``
writes ``benchmarks/perf/results/trained_dense_cost.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

from retrieval_bench.harness.run.prepare import make_chunker
from retrieval_bench.index.embed import default_model_path
from retrieval_bench.index.onnx_backend import OnnxEmbedder
from retrieval_bench.index.trained_model import embedding_format

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "benchmarks" / "models" / "code-minilm-history"
RESULTS = Path(__file__).resolve().parent / "results" / "trained_dense_cost.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from retrieval_bench.files import iter_source_files

    chunker = make_chunker()
    chunks = [c for f in iter_source_files(ROOT / "retrieval_bench") for c in chunker.chunk_file(f)]
    chunks = chunks[: args.texts]
    fmt = embedding_format(MODEL)
    texts = {
        "base": [c.text for c in chunks],
        "trained": [fmt.document(c.path, c.text) for c in chunks],
    }
    with tempfile.TemporaryDirectory() as tmp:
        models = {
            "base": OnnxEmbedder(default_model_path(), Path(tmp), backend="onnx-int8",
                                 name="base", threads=args.threads),
            "trained": OnnxEmbedder(MODEL, Path(tmp), backend="onnx-int8", name="trained",
                                    threads=args.threads),
        }  # fmt: skip
        for name, model in models.items():
            model.embed(texts[name][:8])  # load and warm
        seconds: dict[str, list[float]] = {name: [] for name in models}
        for _ in range(args.repeats):
            for name, model in models.items():
                t0 = time.perf_counter()
                model.embed(texts[name])
                seconds[name].append(time.perf_counter() - t0)
        rate = {name: len(chunks) / statistics.median(s) for name, s in seconds.items()}
        pieces = {
            name: statistics.mean(len(e.ids) for e in models[name]._load()[1].encode_batch(t))
            for name, t in texts.items()
        }
    result = {
        "texts": len(chunks),
        "repeats": args.repeats,
        "threads": args.threads,
        "texts_per_second": {k: round(v, 1) for k, v in rate.items()},
        "mean_word_pieces": {k: round(v, 1) for k, v in pieces.items()},
        "ratio_trained_to_base": round(rate["trained"] / rate["base"], 3),
        "model_mib": round(
            sum(p.stat().st_size for p in MODEL.rglob("*") if p.is_file()) / 2**20, 1
        ),
    }
    write_result(RESULTS, result)
    print(result)


if __name__ == "__main__":
    main()

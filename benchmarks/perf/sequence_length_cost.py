"""What ``rbench fit-dense``'s ``--max-seq-length`` costs and cuts
(docs/stages.md#fit-dense): how many training texts a length truncates, and training
sequences per second at each length, in one process.

Texts: the questions and documents ``fit-dense`` mines (``mine_questions``, the same
defaults but ``--last``/``--max-questions`` smaller) from a few of the shipped model's
training histories (never a SWE-bench repository), counted in the base MiniLM's word
pieces without truncation (special tokens included, as the model sees them). Then for
each length the same ``--steps`` training steps (batch 16, one hard negative: 48
sequences a step, as the shipped model trained) run on a fresh copy of the base model,
after one untimed warm-up step (128 and 256 word pieces; MiniLM was trained at 256), and::

    ratio(L) = sequences/s at L / sequences/s at 128      (same batches, same process)

Usage: ``python benchmarks/perf/sequence_length_cost.py [--repos click attrs]
[--steps 4]`` writes ``benchmarks/perf/results/sequence_length_cost.json`` (with the
machine's load). Nothing is asserted; the quality side of a longer length needs a
training at it (docs/stages.md#fit-dense says what was measured).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

from retrieval_bench.dense_training.questions import mine_questions
from retrieval_bench.dense_training.selection import Instance
from retrieval_bench.dense_training.trainer import TrainSettings, train
from retrieval_bench.index.embed import default_model_path
from retrieval_bench.snapshot.mirrors import open_mirror

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "sequence_length_cost.json"
LENGTHS = (128, 256, 512)
"""Truncation is counted at each; training is timed at :data:`TRAINED`."""
TRAINED = (128, 256)
BATCH = 16


def _shares(lengths: list[int]) -> dict[str, float]:
    qs = statistics.quantiles(lengths, n=20)
    return {
        "n": len(lengths),
        "median": statistics.median(lengths),
        "p75": qs[14],
        "p90": qs[17],
        **{f"over_{n}": sum(x > n for x in lengths) / len(lengths) for n in LENGTHS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", nargs="+", default=["click", "attrs", "isort"])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "repos"))
    parser.add_argument("--last", type=int, default=150)
    parser.add_argument("--max-questions", type=int, default=40)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    base = default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    with tempfile.TemporaryDirectory() as tmp:
        questions = []
        for name in args.repos:
            mirror = open_mirror(str(Path(args.data) / f"{name}.bundle"), Path(tmp), label=name,
                                 todo="a bundle of ../shared/data/repos")  # fmt: skip
            questions += mine_questions(mirror, name, last=args.last,
                                        max_questions=args.max_questions, pool_files=3,
                                        pool_size=64, seed=0).questions  # fmt: skip

    def pieces(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, truncation=False)["input_ids"]]

    positives = [d.text for q in questions for d in q.positives]
    pool = [d.text for q in questions for d in q.pool]
    queries = [q.query for q in questions]
    rng = random.Random(0)
    instances = [
        Instance(q.id, q.query, q.positives[0].text, (rng.choice(q.pool).text,))
        for q in questions
        if q.pool
    ]
    need = BATCH * (args.steps + 1)
    instances = (instances * (need // max(1, len(instances)) + 1))[:need]
    rates: dict[int, float] = {}
    for length in TRAINED:
        settings = TrainSettings(max_seq_length=length, batch_size=BATCH, seed=0)
        train(base, instances[:BATCH], settings, device="cpu")  # warm-up, untimed
        _, stats = train(base, instances[BATCH:], settings, device="cpu")
        rates[length] = stats.sequences_per_second
        print(f"length {length}: {stats.sequences_per_second:.2f} sequences/s "
              f"({stats.steps} steps, {stats.seconds:.1f} s)")  # fmt: skip
    result = {
        "repos": args.repos,
        "questions": len(questions),
        "word_pieces": {
            "queries": _shares(pieces(queries)),
            "positives": _shares(pieces(positives)),
            "pool": _shares(pieces(pool)),
        },
        "steps": args.steps,
        "batch": BATCH,
        "sequences_per_step": BATCH * 3,
        "sequences_per_second": {str(n): round(r, 3) for n, r in rates.items()},
        "ratio_to_128": {str(n): round(r / rates[128], 3) for n, r in rates.items()},
        "threads": args.threads,
    }
    print(result["word_pieces"])
    write_result(RESULTS, result)


if __name__ == "__main__":
    main()

"""Cost of mapping chunks to every definition of their lines
(docs/metrics.md#function-and-module-level), against the symbol-only mapping it
replaced and against the file-level scoring every run pays.

Input: the ``ast`` chunks of this package's own source (``retrieval_bench/``,
~280 Python files), and 400 questions with two gold functions each, ranked 50
random chunks deep (seeded). Timed, in this process and in this order:

* **files**: ``evaluate_stage`` of the questions without gold functions (file
  level only) — the baseline;
* **symbols**: the function and module rankings by each chunk's own symbol (the
  mapping before: re-implemented here as it was);
* **cold**: ``evaluate_stage`` with gold functions on a fresh corpus, the
  definitions of every file parsed (tree-sitter) for the first time;
* **warm**: the same on a second corpus of the same files (the next snapshot of a
  repository: its definitions come from the process's memo by content).

Reported: seconds and ratios to the baseline; the load average is recorded. Not a
test (docs/architecture.md: speed is measured, never asserted).

Usage::

    python benchmarks/perf/entity_mapping_cost.py

writes ``benchmarks/perf/results/entity_mapping_cost.json``.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path

from perf_common import machine, write_result  # sibling module: the scripts run standalone

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.gold_functions import definitions
from retrieval_bench.files import iter_source_files
from retrieval_bench.metrics.retrieval import entities
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.types import Example, Run, module_of

ROOT = Path(__file__).resolve().parents[2] / "retrieval_bench"
OUT = Path(__file__).resolve().parent / "results" / "entity_mapping_cost.json"
QUESTIONS, DEPTH, KS = 400, 50, (1, 3, 5, 10)


def _symbol_rankings(run: Run, corpus: Corpus, examples: list[Example]) -> int:
    """The function and module rankings as they were: a chunk stands for its symbol."""
    n = 0
    for ex in examples:
        for modules in (False, True):
            out: dict[str, None] = {}
            for cid in run.ids(ex.id):
                c = corpus.by_id.get(cid)
                if c is not None and c.symbol:
                    e = f"{c.path}:{c.symbol}"
                    out.setdefault(module_of(e) if modules else e)
            n += len(out)
    return n


def main() -> None:
    load_before = machine()["load_average_1m"]
    sources = list(iter_source_files(ROOT, include=("*.py",)))
    chunker = registry.create("chunkers", "ast", budget=512)
    chunks = [c for s in sources for c in chunker.chunk_file(s)]
    by_path = {s.path: s for s in sources}
    rng = random.Random(13)
    gold_pool = [f"{s.path}:{d.entity}" for s in sources for d in definitions(s.text)]
    examples, scores = [], {}
    for i in range(QUESTIONS):
        picked = rng.sample(chunks, DEPTH)
        gold = tuple(rng.sample(gold_pool, 2))
        files = tuple(dict.fromkeys(g.rpartition(":")[0] for g in gold))
        examples.append(Example(f"q{i}", "?", files, gold_functions=gold))
        scores[f"q{i}"] = {c.id: float(DEPTH - j) for j, c in enumerate(picked)}
    run = Run("random", scores)
    plain = [replace(ex, gold_functions=()) for ex in examples]

    def corpus() -> Corpus:
        return Corpus(ROOT, list(chunks), sources=dict(by_path))

    timings: dict[str, float] = {}
    c0 = corpus()
    t = time.perf_counter()
    evaluate_stage(run, plain, c0, ks=KS, budgets=[8000])
    timings["files"] = time.perf_counter() - t
    t = time.perf_counter()
    _symbol_rankings(run, c0, examples)
    timings["symbols"] = time.perf_counter() - t
    entities._BY_CONTENT.clear()
    t = time.perf_counter()
    cold = evaluate_stage(run, examples, corpus(), ks=KS, budgets=[8000])
    timings["cold"] = time.perf_counter() - t
    t = time.perf_counter()
    warm = evaluate_stage(run, examples, corpus(), ks=KS, budgets=[8000])
    timings["warm"] = time.perf_counter() - t
    assert cold.means == warm.means
    base = timings["files"]
    result = {
        "files_parsed": len({c.path for c in chunks}),
        "chunks": len(chunks),
        "questions": QUESTIONS,
        "depth": DEPTH,
        "seconds": {k: round(v, 4) for k, v in timings.items()},
        "ratio_to_file_scoring": {k: round(v / base, 3) for k, v in timings.items()},
        "function_Acc@10_random": round(cold.means["function_Acc@10"], 4),
        "load_average_1m_before": load_before,
        "machine": machine(),
    }
    write_result(OUT, result)
    print(result["seconds"], result["ratio_to_file_scoring"])


if __name__ == "__main__":
    main()

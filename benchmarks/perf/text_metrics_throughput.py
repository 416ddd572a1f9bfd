"""Throughput of our text metrics against sacrebleu and rouge-score, same process.

    python benchmarks/perf/text_metrics_throughput.py [--samples 10000] [--repeat 3]

Workload: ``--samples`` (prediction, references) pairs — the reference-check
corpus of ``tests/unit/metrics/answer/text/corpus.py`` (713 pairs from the fixture
repositories' answers) cycled, each prediction after the first cycle
perturbed by a seeded word drop or swap, so predictions repeat rarely while
references repeat as they do in a benchmark (one gold answer, many systems).

Timed, best of ``--repeat`` passes, every pass starting with cold tokenizer
caches (ours cleared, sacrebleu's a fresh object):

* sentence BLEU (defaults: exp smoothing, 13a, effective order) — ours
  ``BLEU().score_samples`` (returns ``Score`` objects, catches per-sample
  errors) against ``sacrebleu.sentence_bleu`` (the function, which builds a
  ``BLEU`` object per call) and against one reused ``sacrebleu.BLEU`` object's
  ``sentence_score`` (its fast path);
* corpus BLEU — ``BLEU().corpus_score`` against ``sacrebleu.corpus_bleu``;
* ROUGE-1, ROUGE-2, ROUGE-L, ROUGE-Lsum (F, no stemmer) — ours
  ``score_samples`` against ``RougeScorer([type]).score_multi`` per sample;
* exact match and token F1 alone (no reference library), samples/s.

Ratios are ours/theirs *speed* (> 1: ours faster). The largest absolute score
difference per pair is reported beside each timing as a sanity check. Speed
is never asserted in tests (docs/architecture.md#testing-conventions). Writes
``benchmarks/perf/results/text_metrics.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sacrebleu  # noqa: E402
from perf_common import write_result  # noqa: E402
from rouge_score import rouge_scorer  # noqa: E402

from retrieval_bench.contracts.answer_metric import MetricBase, Sample  # noqa: E402
from retrieval_bench.metrics.answer.text.bleu import BLEU, clear_token_cache  # noqa: E402
from retrieval_bench.metrics.answer.text.exact_match import ExactMatch  # noqa: E402
from retrieval_bench.metrics.answer.text.rouge import Rouge  # noqa: E402
from retrieval_bench.metrics.answer.text.token_f1 import TokenF1  # noqa: E402
from tests.unit.metrics.answer.text.corpus import build_corpus  # noqa: E402

RESULTS = REPO / "benchmarks" / "perf" / "results" / "text_metrics.json"


def workload(n: int, seed: int = 0) -> list[Sample]:
    """``n`` samples: the corpus cycled, later cycles with one word dropped or swapped."""
    rng = random.Random(seed)
    base = build_corpus()
    samples = []
    for i in range(n):
        pair = base[i % len(base)]
        words = pair.prediction.split(" ")
        if i >= len(base) and len(words) > 2:
            j = rng.randrange(len(words) - 1)
            if rng.random() < 0.5:
                del words[j]
            else:
                words[j], words[j + 1] = words[j + 1], words[j]
        samples.append(Sample(" ".join(words), pair.references))
    return samples


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Fastest wall time of ``repeat`` runs of ``fn`` and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        clear_token_cache()
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _values(metric: MetricBase, samples: Sequence[Sample]) -> list[float]:
    return [s.value if s.value is not None else float("nan") for s in metric.score_samples(samples)]


def _max_diff(ours: Sequence[float], theirs: Sequence[float]) -> float:
    return max(abs(a - b) for a, b in zip(ours, theirs, strict=True))


def _row(n: int, ours_s: float, theirs_s: float, theirs_impl: str, diff: float) -> dict[str, Any]:
    return {
        "ours_samples_per_s": round(n / ours_s, 1),
        "baseline_samples_per_s": round(n / theirs_s, 1),
        "baseline": theirs_impl,
        "speed_ratio_ours_over_baseline": round(theirs_s / ours_s, 2),
        "max_abs_diff": diff,
    }


def bleu_rows(samples: list[Sample], repeat: int) -> dict[str, dict[str, Any]]:
    n = len(samples)
    hyps = [s.prediction for s in samples]
    refs = [list(s.references) for s in samples]
    ours_s, ours = best_of(repeat, lambda: _values(BLEU(), samples))
    fn_s, fn = best_of(
        repeat,
        lambda: [
            sacrebleu.sentence_bleu(h, r).score / 100 for h, r in zip(hyps, refs, strict=True)
        ],
    )

    def reused() -> list[float]:
        metric = sacrebleu.BLEU(effective_order=True)
        return [metric.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs, strict=True)]

    obj_s, obj = best_of(repeat, reused)
    width = max(len(r) for r in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
    ours_corpus_s, ours_corpus = best_of(repeat, lambda: BLEU().corpus_score(samples))
    theirs_corpus_s, theirs_corpus = best_of(
        repeat, lambda: sacrebleu.corpus_bleu(hyps, streams).score / 100
    )
    return {
        "sentence_bleu_vs_function": _row(
            n, ours_s, fn_s, "sacrebleu.sentence_bleu()", _max_diff(ours, fn)
        ),
        "sentence_bleu_vs_reused_object": _row(
            n,
            ours_s,
            obj_s,
            "sacrebleu.BLEU(effective_order=True).sentence_score",
            _max_diff(ours, obj),
        ),
        "corpus_bleu": _row(
            n,
            ours_corpus_s,
            theirs_corpus_s,
            "sacrebleu.corpus_bleu()",
            abs(ours_corpus - theirs_corpus),
        ),
    }


def rouge_rows(samples: list[Sample], repeat: int) -> dict[str, dict[str, Any]]:
    n = len(samples)
    rows = {}
    for rouge_type in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        metric = Rouge(rouge_type=rouge_type)
        scorer = rouge_scorer.RougeScorer([rouge_type], use_stemmer=False)
        ours_s, ours = best_of(repeat, lambda m=metric: _values(m, samples))
        theirs_s, theirs = best_of(
            repeat,
            lambda sc=scorer, t=rouge_type: [
                sc.score_multi(list(s.references) or [""], s.prediction)[t].fmeasure
                for s in samples
            ],
        )
        impl = f"rouge_score.RougeScorer([{rouge_type!r}]).score_multi"
        rows[rouge_type] = _row(n, ours_s, theirs_s, impl, _max_diff(ours, theirs))
    return rows


def alone_rows(samples: list[Sample], repeat: int) -> dict[str, dict[str, Any]]:
    rows = {}
    for name, metric in (
        ("exact_match", ExactMatch()),
        ("exact_match_squad", ExactMatch(squad=True)),
        ("token_f1", TokenF1()),
        ("token_f1_squad", TokenF1(squad=True)),
    ):
        seconds, _ = best_of(repeat, lambda m=metric: m.score_samples(samples))
        rows[name] = {"ours_samples_per_s": round(len(samples) / seconds, 1)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    samples = workload(args.samples)
    rows = {
        **bleu_rows(samples, args.repeat),
        **rouge_rows(samples, args.repeat),
        **alone_rows(samples, args.repeat),
    }
    result = {
        "benchmark": "text_metrics_throughput",
        "workload": {
            "samples": len(samples),
            "source": "tests/unit/metrics/answer/text/corpus.py cycled and perturbed (seed 0)",
            "multi_reference_samples": sum(len(s.references) > 1 for s in samples),
            "mean_prediction_words": round(
                sum(len(s.prediction.split()) for s in samples) / len(samples), 1
            ),
        },
        "repeat": args.repeat,
        "versions": {"sacrebleu": version("sacrebleu"), "rouge-score": version("rouge-score")},
        "results": rows,
    }
    write_result(args.out, result)
    print(f"{len(samples)} samples, best of {args.repeat}")
    print(f"{'task':34} {'ours/s':>10} {'baseline/s':>11} {'ours/theirs':>11} {'max diff':>9}")
    for task, row in rows.items():
        base = row.get("baseline_samples_per_s")
        ratio = row.get("speed_ratio_ours_over_baseline")
        diff = row.get("max_abs_diff")
        print(
            f"{task:34} {row['ours_samples_per_s']:>10.0f} "
            f"{'-' if base is None else f'{base:.0f}':>11} "
            f"{'-' if ratio is None else f'{ratio:.2f}x':>11} "
            f"{'-' if diff is None else f'{diff:.1e}':>9}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

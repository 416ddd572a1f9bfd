"""Agreement of our BLEU and ROUGE with sacrebleu and rouge-score, as a markdown table.

    python benchmarks/agreement/text_metrics.py        # from the repository root

Runs every check of ``tests/unit/metrics/answer/text/agreement.py`` in full (all 32
sentence-BLEU and corpus-BLEU configurations: 4 smoothings x tokenize 13a/none
x lowercase off/on x order 2/4; ROUGE-1/2/L/Lsum P/R/F with and without the
stemmer; the 13a tokenizer token for token) on the seeded corpus of
``tests/unit/metrics/answer/text/corpus.py`` and prints one row per check: pairs
compared, largest and mean absolute difference on the 0..1 scale, the
tolerance and whether it passed. Exits 1 if any check fails.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.unit.metrics.answer.text.agreement import all_checks  # noqa: E402
from tests.unit.metrics.answer.text.corpus import build_corpus  # noqa: E402


def main() -> int:
    corpus = build_corpus()
    results = all_checks(corpus, full=True)
    print(
        f"Corpus: {len(corpus)} (prediction, references) pairs "
        f"({sum(len(p.references) > 1 for p in corpus)} multi-reference); "
        f"sacrebleu {version('sacrebleu')}, rouge-score {version('rouge-score')}.\n"
    )
    print("| metric / option | pairs | max abs diff | mean abs diff | tolerance | pass |")
    print("|---|---:|---:|---:|---:|:---:|")
    for r in results:
        print(
            f"| {r.name} | {r.pairs} | {r.max_abs_diff:.2e} | {r.mean_abs_diff:.2e} "
            f"| {r.tolerance:.0e} | {'yes' if r.passed else '**NO**'} |"
        )
    failed = sum(not r.passed for r in results)
    print(f"\n{len(results) - failed}/{len(results)} checks passed.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

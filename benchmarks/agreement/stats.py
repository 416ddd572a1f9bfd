"""Agreement of retrieval_bench.metrics.stats with scipy 1.17.1, as a markdown table.

Runs every comparison family of ``tests/unit/metrics/stats/test_reference.py``
(the unit tests run the same comparisons on fewer cases) over seeded paired
samples of three kinds (continuous scores, 0/1 values like Hit@k, graded
[0, 1] values like nDCG, with ties and zero differences) and 5 to 500 pairs,
and prints one row per family: cases, comparisons, the largest |p ours - p
scipy| and |statistic ours - statistic scipy|, the tolerance, the largest
share of its tolerance any comparison used, and whether all passed.

For the bootstrap CI rows the "p" column holds the largest endpoint gap
(|low ours - low scipy| or the same for high) and the tolerance is a share of
scipy's interval width plus the spacing of the bootstrap distribution's atoms
around the endpoint, which is discrete for 0/1 data and small n (Monte Carlo
on both sides, 10,000 resamples each). Monte Carlo randomisation p-values are
allowed 5 binomial s.d. of the difference of two estimates.

    .venv/bin/python benchmarks/agreement/stats.py [--cases 90] [--quick]

``--quick`` skips scipy.stats.wilcoxon's own sign-flip enumeration for tied
samples above 8 pairs (about 1.5 s per call at 13 pairs); exits non-zero when
any comparison is out of tolerance.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the comparisons live with the unit tests

from tests.unit.metrics.stats.test_reference import (  # noqa: E402
    CI_TOLERANCE,
    EXACT_TOLERANCE,
    Gap,
    agree_bootstrap_ci,
    agree_randomisation_exact,
    agree_randomisation_monte_carlo,
    agree_t,
    agree_wilcoxon_approx,
    agree_wilcoxon_auto,
    agree_wilcoxon_exact,
)
from tests.unit.metrics.stats.test_samples import cases  # noqa: E402

TOLERANCE_TEXT = {
    "t": f"{EXACT_TOLERANCE:g}",
    "wilcoxon approx": f"{EXACT_TOLERANCE:g}",
    "wilcoxon exact": f"{EXACT_TOLERANCE:g}",
    "wilcoxon auto": f"{EXACT_TOLERANCE:g}",
    "randomisation exact": f"{EXACT_TOLERANCE:g}",
    "randomisation Monte Carlo": "5 binomial s.d.",
    **{
        f"bootstrap CI {method}": f"{share:g} x width + atom spacing"
        for method, share in CI_TOLERANCE.items()
    },
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=90)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    enumerated = 8 if args.quick else 13
    warnings.simplefilter("ignore")  # scipy's warnings on ties/zeros in its own tests

    start = time.perf_counter()
    gaps_by_family: dict[str, list[Gap]] = {}
    cases_by_family: dict[str, set[str]] = {}
    families = {
        "t": agree_t,
        "wilcoxon approx": agree_wilcoxon_approx,
        "wilcoxon exact": lambda c: agree_wilcoxon_exact(
            c, max_wilcoxon_enumerated=min(enumerated, 10)
        ),
        "wilcoxon auto": lambda c: agree_wilcoxon_auto(c, max_wilcoxon_enumerated=enumerated),
        "randomisation exact": agree_randomisation_exact,
        "randomisation Monte Carlo": agree_randomisation_monte_carlo,
        "bootstrap CI": agree_bootstrap_ci,
    }
    for case in cases(args.cases):
        for function in families.values():
            for gap in function(case):
                gaps_by_family.setdefault(gap.family, []).append(gap)
                cases_by_family.setdefault(gap.family, set()).add(case.label)

    print(f"Agreement with scipy: {args.cases} seeded paired samples, 5-500 pairs\n")
    print(
        "| test | cases | comparisons | max abs p diff | max abs stat diff | tolerance (p) "
        "| max share of tolerance | pass |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---|")
    all_ok = True
    for family in TOLERANCE_TEXT:
        gaps = gaps_by_family.get(family, [])
        if not gaps:
            continue
        ok = all(gap.ok for gap in gaps)
        all_ok &= ok
        share = max(gap.p_diff / gap.p_tolerance for gap in gaps)
        print(
            f"| {family} | {len(cases_by_family[family])} | {len(gaps)} "
            f"| {max(g.p_diff for g in gaps):.2e} | {max(g.stat_diff for g in gaps):.2e} "
            f"| {TOLERANCE_TEXT[family]} | {share:.3f} | {'yes' if ok else 'NO'} |"
        )
        for gap in [g for g in gaps if not g.ok][:3]:
            print(f"|   failed: {gap.label} | | | {gap.p_diff:.2e} | {gap.stat_diff:.2e} | | | |")
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Speed and peak memory of retrieval_bench.metrics.stats against scipy.stats, same process.

Workload: one paired sample of N = 10,000 per-query scores (graded values in
[0, 1] on a 0.05 grid, like nDCG: ties and zero differences included), the
size of a large run comparison. Timed, ours vs scipy 1.17.1:

- paired t-test: ``paired_t_test`` vs ``ttest_rel``;
- Wilcoxon, normal approximation: ``wilcoxon_signed_rank(method="approx")``
  vs ``wilcoxon(method="asymptotic")``;
- randomisation, 10,000 sign-flip resamples: ``randomisation_test`` vs
  ``permutation_test(permutation_type="samples", vectorized=True)`` with a
  vectorised mean-difference statistic and the same ``n_resamples``;
- bootstrap CI of the mean, 10,000 resamples, percentile and BCa:
  ``bootstrap_ci`` vs ``bootstrap(np.mean)``;
- the paired bootstrap test alone (scipy has none).

scipy runs with its default ``batch=None`` (all resamples at once). Times are
the best of ``--repeat`` runs; peak memory is measured in a separate pass
with tracemalloc (numpy reports its buffers to it). Results are ratios
against scipy measured in the same run (no timed assertions in tests:
docs/architecture.md#testing-conventions).

    .venv/bin/python benchmarks/perf/stats_vs_scipy.py [--n 10000] [--resamples 10000]

Writes benchmarks/perf/results/stats.json.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy
from perf_common import write_result  # sibling module: the scripts run standalone
from scipy import stats as scipy_stats

from retrieval_bench.metrics import stats

RESULTS = Path(__file__).resolve().parent / "results" / "stats.json"


def paired_graded_sample(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 21, n)
    step = rng.integers(-3, 4, n) * (rng.random(n) < 0.6) + (rng.random(n) < 0.1)
    return a / 20, np.clip(a + step, 0, 20) / 20


def best_time(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        out = function()
        best = min(best, time.perf_counter() - start)
    return best, out


def peak_bytes(function: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    a, b = paired_graded_sample(args.n)
    d = np.round(b - a, 12)
    resamples = args.resamples

    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
        "t_test": (
            lambda: stats.paired_t_test(a, b).p_value,
            lambda: scipy_stats.ttest_rel(b, a).pvalue,
        ),
        "wilcoxon_approx": (
            lambda: stats.wilcoxon_signed_rank(a, b, method="approx").p_value,
            lambda: scipy_stats.wilcoxon(d, method="asymptotic").pvalue,
        ),
        "randomisation": (
            lambda: stats.randomisation_test(a, b, n_resamples=resamples).p_value,
            lambda: (
                scipy_stats.permutation_test(
                    (a, b),
                    mean_difference,
                    permutation_type="samples",
                    vectorized=True,
                    n_resamples=resamples,
                    rng=0,
                ).pvalue
            ),
        ),
        "bootstrap_ci_percentile": (
            lambda: stats.bootstrap_ci(b, n_resamples=resamples),
            lambda: (
                scipy_stats.bootstrap(
                    (b,), np.mean, method="percentile", n_resamples=resamples, rng=0
                ).confidence_interval
            ),
        ),
        "bootstrap_ci_bca": (
            lambda: stats.bootstrap_ci(b, n_resamples=resamples, method="bca"),
            lambda: (
                scipy_stats.bootstrap(
                    (b,), np.mean, method="BCa", n_resamples=resamples, rng=0
                ).confidence_interval
            ),
        ),
        "paired_bootstrap_test": (
            lambda: stats.paired_bootstrap_test(a, b, n_resamples=resamples).p_value,
            None,
        ),
    }

    seconds: dict[str, dict[str, float]] = {}
    memory: dict[str, dict[str, int]] = {}
    outputs: dict[str, dict[str, str]] = {}
    ratios: dict[str, float] = {}
    for name, (ours, theirs) in pairs.items():
        slow = name.startswith(("randomisation", "bootstrap", "paired_bootstrap"))
        repeat = max(1, args.repeat - 1) if slow else args.repeat * 5
        ours_s, ours_out = best_time(ours, repeat)
        seconds[name] = {"ours": round(ours_s, 5)}
        memory[name] = {"ours_peak": peak_bytes(ours)}
        outputs[name] = {"ours": str(ours_out)}
        if theirs is not None:
            theirs_s, theirs_out = best_time(theirs, repeat)
            seconds[name]["scipy"] = round(theirs_s, 5)
            memory[name]["scipy_peak"] = peak_bytes(theirs)
            outputs[name]["scipy"] = str(theirs_out)
            ratios[f"{name}: ours / scipy time"] = round(ours_s / theirs_s, 3)
            ratios[f"{name}: ours / scipy peak memory"] = round(
                memory[name]["ours_peak"] / max(1, memory[name]["scipy_peak"]), 3
            )
        ours_mib = memory[name]["ours_peak"] / 2**20
        line = f"{name:24s} ours {ours_s * 1000:9.1f} ms  peak {ours_mib:7.1f} MiB"
        if theirs is not None:
            line += (
                f" | scipy {seconds[name]['scipy'] * 1000:9.1f} ms  peak "
                f"{memory[name]['scipy_peak'] / 2**20:7.1f} MiB | time ratio "
                f"{ratios[f'{name}: ours / scipy time']}"
            )
        print(line)

    write_result(
        args.out,
        {
            "benchmark": "stats_vs_scipy",
            "workload": {
                "pairs": args.n,
                "resamples": resamples,
                "data": "graded [0, 1] values on a 0.05 grid (ties, zero differences)",
                "scipy": scipy.__version__,
                "numpy": np.__version__,
            },
            "seconds": seconds,
            "peak_memory_bytes": memory,
            "ratios": ratios,
            "outputs": outputs,
        },
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

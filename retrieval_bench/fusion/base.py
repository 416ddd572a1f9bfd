"""The fusion protocol (SPEC §1.4): many runs in, one run out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from retrieval_bench.errors import ConfigError
from retrieval_bench.types import Run


class Fusion(Protocol):
    name: str

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Combine per-retriever runs into one run of at most ``k`` per query."""
        ...


def query_ids(runs: Sequence[Run]) -> list[str]:
    """Union of the runs' query ids, in order of first appearance."""
    return list(dict.fromkeys(q for run in runs for q in run.query_ids()))


def resolve_weights(
    runs: Sequence[Run], weights: Mapping[str, float] | None, fusion: str
) -> list[float]:
    """One weight per run, looked up by run name; unnamed runs weigh 1.0.

    A weight naming no run is an error (most often a typo in the config).
    """
    if not weights:
        return [1.0] * len(runs)
    names = {run.name for run in runs}
    unknown = sorted(set(weights) - names)
    if unknown:
        raise ConfigError(
            f"{fusion}: weights name unknown runs {unknown}; runs are {sorted(names)}"
        )
    negative = sorted(n for n, w in weights.items() if w < 0)
    if negative:
        raise ConfigError(f"{fusion}: weights must be >= 0; negative for {negative}")
    return [float(weights.get(run.name, 1.0)) for run in runs]

"""What a run comparison produces: :class:`Comparison` and its rows, the names
of the paired tests and which metrics are better lower.

Free of heavy imports (no statistics code), so the CLI's output and the web
pages can use them without loading scipy; the comparison itself is
:func:`retrieval_bench.harness.compare.runs.compare_runs` (docs/metrics.md#statistics).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from retrieval_bench.measures import parse_measure

__all__ = [
    "CONFIDENCE",
    "TESTS",
    "Comparison",
    "ComparisonRow",
    "PairInfo",
    "RunSide",
    "StageGap",
    "higher_is_better",
]

TESTS = ("randomisation", "t", "wilcoxon", "bootstrap")
"""Names of the paired tests, as in :data:`retrieval_bench.metrics.stats.PAIRED_TESTS`."""
CONFIDENCE = 0.95


def higher_is_better(metric: str) -> bool:
    """``False`` for costs and losses (``lost``, ``Lost@5``, ``failed``, ``seconds`` ...):
    the direction of :func:`~retrieval_bench.measures.parse_measure`'s measure."""
    return parse_measure(metric).higher_is_better


@dataclass(frozen=True)
class RunSide:
    """What a compared run was measured with: its config and its data, so a reader
    sees which configs are compared and whether both saw the same questions."""

    run_id: str
    name: str
    """The config's ``name:``."""
    config_fingerprint: str | None
    datasets: list[str]
    dataset_fingerprint: str | None
    """Of the questions the run scored (benchmark runs); of the predictions file (eval runs)."""
    dataset_fingerprints: dict[str, str] = field(default_factory=dict)
    """Per dataset name, where the run recorded it."""
    kind: str = "benchmark"
    """``benchmark`` or ``eval`` (an ``rbench eval`` run)."""

    def describe(self) -> str:
        """``config NAME (config fingerprint F), data D1, D2 (dataset fingerprint G)``."""
        config = f"config {self.name}" + (
            f" (config fingerprint {self.config_fingerprint[:12]})"
            if self.config_fingerprint else ""
        )  # fmt: skip
        what = "predictions" if self.kind == "eval" else "data"
        data = f"{what} {', '.join(self.datasets) or '?'}" + (
            f" (dataset fingerprint {self.dataset_fingerprint})"
            if self.dataset_fingerprint else ""
        )  # fmt: skip
        return f"{config}, {data}"


@dataclass(frozen=True)
class StageGap:
    """Stages a ``RUN`` vs ``RUN`` comparison leaves out because one side lacks them."""

    candidate: str
    baseline_only: list[str]
    candidate_only: list[str]

    def describe(self, baseline: str) -> str:
        """One line naming the stages only in each run."""
        return (
            f"stages not compared: only in baseline {baseline}: "
            f"{', '.join(self.baseline_only) or 'none'}; only in candidate {self.candidate}: "
            f"{', '.join(self.candidate_only) or 'none'}"
        )


@dataclass(frozen=True)
class PairInfo:
    """One stage pair of one candidate: how many queries paired."""

    candidate: str
    baseline_stage: str
    candidate_stage: str
    n_paired: int
    n_baseline_only: int
    n_candidate_only: int


@dataclass(frozen=True)
class ComparisonRow:
    candidate: str
    """The candidate run id."""
    baseline_stage: str
    candidate_stage: str
    metric: str
    baseline_mean: float
    candidate_mean: float
    delta: float
    """Mean of candidate − baseline over the paired queries."""
    ci_low: float
    ci_high: float
    p_value: float
    """Of the chosen test, before correction."""
    p_holm: float
    significant: bool
    effect_size: float
    """Cohen's d_z of the paired differences."""
    n_pairs: int
    n_unpaired: int
    """Queries of the subset present in only one of the two stages."""
    n_dropped: int
    """Paired queries left out because the metric is NaN or absent on a side."""
    higher_is_better: bool
    direction: str
    """``better``, ``worse`` or ``same`` (sign of delta, read through the metric's sense)."""
    p_values: dict[str, float]
    """All four tests, uncorrected."""
    identical: bool = False
    """Every paired value equal: no test is possible, the row is outside the Holm family."""

    @property
    def stage(self) -> str:
        if self.baseline_stage == self.candidate_stage:
            return self.baseline_stage
        return f"{self.baseline_stage}→{self.candidate_stage}"


@dataclass
class Comparison:
    baseline: str
    """The baseline run id."""
    candidates: list[str]
    test: str
    alpha: float
    n_resamples: int
    seed: int
    subset: str
    metrics: list[str]
    rows: list[ComparisonRow] = field(default_factory=list)
    pairs: list[PairInfo] = field(default_factory=list)
    confidence: float = CONFIDENCE
    holm_family: str = (
        "each metric: all its rows across candidate runs and stages, except identical ones"
    )
    run_names: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    sides: dict[str, RunSide] = field(default_factory=dict)
    """Run id → its config and data (every compared run)."""
    stage_gaps: list[StageGap] = field(default_factory=list)
    """Per candidate whose ``RUN`` vs ``RUN`` pairing left stages out."""
    data_warnings: list[str] = field(default_factory=list)
    """Runs on different data compared anyway (``allow_different_data``): part of the
    printed comparison, not a side note."""

    def rows_for(self, metric: str) -> list[ComparisonRow]:
        return [r for r in self.rows if r.metric == metric]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (non-finite numbers become ``None``)."""
        out = asdict(self)
        for row, raw in zip(self.rows, out["rows"], strict=True):
            raw["stage"] = row.stage
        return _finite(out)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value

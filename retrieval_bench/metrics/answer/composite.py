"""A metric made of other metrics (docs/metrics.md#composite-metrics).

``Composite(parts=..., weights=..., aggregation=...)`` scores a sample with every
part and combines the sub-scores into one number:

* ``weighted_mean`` — Σ wᵢ·sᵢ with the weights normalised to sum 1;
* ``min`` / ``max`` — the smallest / largest sub-score (weights only decide
  *which* parts take part: a part of weight 0 is ignored);
* ``geometric_mean`` — the weighted geometric mean Π sᵢ^wᵢ = exp(Σ wᵢ·ln sᵢ)
  (Σwᵢ = 1). Any participating sub-score of 0 makes the result 0.0; a
  negative sub-score has no real weighted geometric mean and is an error
  (in a batch: a missing value). The unweighted form
  (Π sᵢ)^(1/n) is the case of equal weights.

Weights default to equal, must be finite, non-negative and not all zero, and
are normalised to sum 1. Sub-scores outside [0, 1] are accepted (min/max and
the mean do not care).

A part's missing sub-score (docs/architecture.md#bad-input-and-failures) either
makes the composite missing with that part's error (``missing="fail"``, the
default) or is left out and the remaining weights renormalised
(``missing="skip"``).

Batching: :meth:`Composite.score_samples` calls each part's ``score_samples``
once over the whole batch (an LLM part sends its batch concurrently), and
:meth:`Composite.ascore_samples` awaits every part's ``ascore_samples`` at
once with :func:`asyncio.gather`. Every sub-score lands in ``Score.details``
under the part's name (duplicate names get ``_2``, ``_3``… suffixes; a part's
own details appear as ``part.key``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

from retrieval_bench.contracts.answer_metric import Metric, MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams

Aggregation = Literal["weighted_mean", "min", "max", "geometric_mean"]
MissingPolicy = Literal["skip", "fail"]
Aggregator = Callable[[Sequence[float], Sequence[float]], float]
"""(values, weights summing to 1, every weight > 0) -> combined value."""

COMPOSITE_KEY = "composite"
"""The key of the combined value in :meth:`Composite.detailed_evaluate`."""


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    return math.fsum(w * v for v, w in zip(values, weights, strict=True))


def minimum(values: Sequence[float], weights: Sequence[float]) -> float:
    return min(values)


def maximum(values: Sequence[float], weights: Sequence[float]) -> float:
    return max(values)


def weighted_geometric_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """exp(Σ wᵢ·ln sᵢ); 0.0 when any sᵢ is 0; ValueError when any sᵢ < 0."""
    negative = [v for v in values if v < 0]
    if negative:
        raise ValueError(
            f"geometric_mean needs non-negative sub-scores, got {negative[0]}; "
            "use weighted_mean, min or max for signed metrics"
        )
    if any(v == 0 for v in values):
        return 0.0
    return math.exp(math.fsum(w * math.log(v) for v, w in zip(values, weights, strict=True)))


AGGREGATIONS: dict[str, Aggregator] = {
    "weighted_mean": weighted_mean,
    "min": minimum,
    "max": maximum,
    "geometric_mean": weighted_geometric_mean,
}
MISSING_POLICIES = ("skip", "fail")


def normalise_weights(weights: Sequence[float] | None, n_parts: int) -> tuple[float, ...]:
    """Validate ``weights`` for ``n_parts`` parts and scale them to sum 1 (default: equal)."""
    if weights is None:
        return tuple(1.0 / n_parts for _ in range(n_parts))
    ws = [float(w) for w in weights]
    if len(ws) != n_parts:
        raise ValueError(f"composite: {len(ws)} weights for {n_parts} parts; give one per part")
    for i, w in enumerate(ws):
        if not math.isfinite(w):
            raise ValueError(f"composite: weight {i} is {w}; weights must be finite")
        if w < 0:
            raise ValueError(f"composite: weight {i} is {w}; weights must be >= 0")
    total = math.fsum(ws)
    if total <= 0:
        raise ValueError("composite: all weights are zero; give at least one part a weight > 0")
    return tuple(w / total for w in ws)


def unique_names(names: Sequence[str], reserved: Sequence[str] = (COMPOSITE_KEY,)) -> list[str]:
    """``names`` with repeats (and reserved keys) suffixed ``_2``, ``_3``… so none collide."""
    taken = set(reserved)
    out: list[str] = []
    for name in names:
        candidate, k = name, 1
        while candidate in taken:
            k += 1
            candidate = f"{name}_{k}"
        taken.add(candidate)
        out.append(candidate)
    return out


def _is_missing(score: Score) -> bool:
    return score.value is None or math.isnan(score.value)


class Composite(MetricBase):
    """Combine the scores of ``parts`` into one (see the module docstring).

    Parameters (``Params``): ``weights`` (one per part; default equal),
    ``aggregation`` and ``missing``. Keywords: ``parts`` (the built metrics; a
    config's ``parts:`` entries are built by the metric factory) and ``name``.
    """

    description = "weighted combination of sub-metrics"

    class Params(StageParams):
        weights: list[float] | None = None
        aggregation: str = "weighted_mean"
        missing: str = "fail"

    params: Composite.Params

    def __init__(
        self,
        params: Composite.Params | None = None,
        /,
        *,
        parts: Sequence[Metric] = (),
        name: str = "composite",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        parts = list(parts)
        if not parts:
            raise ValueError("composite: no parts; give at least one metric")
        for i, part in enumerate(parts):
            if not isinstance(part, Metric):
                raise TypeError(
                    f"composite: part {i} is a {type(part).__name__}, not a metric "
                    "(needs name, score_samples and ascore_samples)"
                )
        if p.aggregation not in AGGREGATIONS:
            raise ValueError(
                f"composite: unknown aggregation {p.aggregation!r}; "
                f"choose one of: {', '.join(AGGREGATIONS)}"
            )
        if p.missing not in MISSING_POLICIES:
            raise ValueError(
                f"composite: unknown missing policy {p.missing!r}; choose 'skip' or 'fail'"
            )
        self.parts: tuple[Metric, ...] = tuple(parts)
        self.weights = normalise_weights(p.weights, len(parts))
        self.aggregation = cast("Aggregation", p.aggregation)
        self.missing = cast("MissingPolicy", p.missing)
        self.name = name
        self.part_names: tuple[str, ...] = tuple(unique_names([part.name for part in parts]))
        self._aggregate: Aggregator = AGGREGATIONS[p.aggregation]

    # -- one sample --------------------------------------------------------------
    def score(self, sample: Sample) -> Score:
        """Score ``sample`` with every part; raises only for an impossible combination."""
        return self._combine([self._part_scores(part, [sample])[0] for part in self.parts])

    def detailed_evaluate(
        self,
        prediction: str,
        reference: str | Sequence[str] | None = None,
        *,
        question: str | None = None,
        contexts: Sequence[str] = (),
    ) -> dict[str, float | None]:
        """Every sub-score by part name, plus the combined value under ``"composite"``."""
        score = self.evaluate(prediction, reference, question=question, contexts=contexts)
        return {**score.details, COMPOSITE_KEY: score.value}

    # -- batches -----------------------------------------------------------------
    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        """One ``score_samples`` call per part over the whole batch, then combine."""
        per_part = [self._part_scores(part, samples) for part in self.parts]
        return self._combine_batch(per_part, len(samples))

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        """Every part's ``ascore_samples`` runs concurrently (asyncio.gather)."""
        results = await asyncio.gather(
            *(part.ascore_samples(samples) for part in self.parts), return_exceptions=True
        )
        per_part = [
            self._checked(part, result, len(samples))
            for part, result in zip(self.parts, results, strict=True)
        ]
        return self._combine_batch(per_part, len(samples))

    # -- internals ----------------------------------------------------------------
    def _part_scores(self, part: Metric, samples: Sequence[Sample]) -> list[Score]:
        try:
            result: list[Score] | BaseException = part.score_samples(samples)
        except Exception as exc:  # noqa: BLE001 - a failing part is a missing value
            result = exc
        return self._checked(part, result, len(samples))

    @staticmethod
    def _checked(part: Metric, result: object, n: int) -> list[Score]:
        """A part's batch result, or missing values when it raised or miscounted."""
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            return [Score.missing(f"{type(result).__name__}: {result}")] * n
        if not isinstance(result, list) or len(result) != n:
            got = len(result) if isinstance(result, list) else type(result).__name__
            return [Score.missing(f"{part.name} returned {got} scores for {n} samples")] * n
        return result

    def _combine_batch(self, per_part: Sequence[Sequence[Score]], n: int) -> list[Score]:
        out: list[Score] = []
        for i in range(n):
            try:
                out.append(self._combine([scores[i] for scores in per_part]))
            except (ValueError, ArithmeticError) as exc:
                out.append(Score.missing(f"{self.name}: {exc}"))
        return out

    def _combine(self, scores: Sequence[Score]) -> Score:
        details: dict[str, float | None] = {}
        reasons: list[str] = []
        for label, s in zip(self.part_names, scores, strict=True):
            details[label] = None if _is_missing(s) else s.value
            for key, value in s.details.items():
                details.setdefault(f"{label}.{key}", value)
            if s.reason:
                reasons.append(f"{label}: {s.reason}")
        reason = "; ".join(reasons) or None

        present: list[tuple[float, float]] = []
        absent: list[tuple[str, Score]] = []
        for label, s, w in zip(self.part_names, scores, self.weights, strict=True):
            if w <= 0:
                continue  # a part of weight 0 takes no part (not even in min/max)
            if s.value is None or math.isnan(s.value):
                absent.append((label, s))
            else:
                present.append((s.value, w))
        if absent and self.missing == "fail":
            label, s = absent[0]
            error = f"{label}: {s.error or 'missing value'}"
            return Score(None, reason=reason, error=error, raw=s.raw, details=details)
        if not present:
            error = "; ".join(f"{label}: {s.error or 'missing value'}" for label, s in absent)
            return Score(None, reason=reason, error=f"no part scored ({error})", details=details)
        total = math.fsum(w for _, w in present)
        values = [v for v, _ in present]
        weights = [w / total for _, w in present]
        value = self._aggregate(values, weights)
        return Score(value, reason=reason, details=details)


__all__ = [
    "AGGREGATIONS",
    "COMPOSITE_KEY",
    "Composite",
    "normalise_weights",
    "unique_names",
    "weighted_geometric_mean",
]

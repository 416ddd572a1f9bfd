"""The metric interface (docs/metrics.md#metric-interface-and-evaluator).

A metric scores one :class:`Sample` — a prediction against its reference(s),
with the question and retrieved contexts when a metric needs them — and
returns a :class:`Score`: a number, or a *missing* value carrying the error
and the raw model text (malformed LLM output is a missing value, not a crash:
docs/architecture.md#bad-input-and-failures). Everything else is built on the one narrow method
:meth:`MetricBase.score`:

* :meth:`MetricBase.evaluate` — one (prediction, reference[, context]) call;
* :meth:`MetricBase.score_samples` — a batch; LLM metrics override it to send
  the whole batch to the model concurrently;
* :meth:`MetricBase.ascore_samples` — the same, awaitable (the evaluator runs
  many metrics at once);
* :func:`aggregate` — mean, std, min, max, count and a bootstrap CI of the mean.

A failing sample never aborts a batch: its exception becomes ``Score.missing``.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from retrieval_bench.contracts.params import Configurable


@dataclass(frozen=True)
class Sample:
    """One thing to score. ``references`` may hold several acceptable answers
    (BLEU/ROUGE use them all; exact match and token F1 take the best)."""

    prediction: str
    references: tuple[str, ...] = ()
    question: str | None = None
    contexts: tuple[str, ...] = ()
    id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> str:
        """The first reference ("" when there is none)."""
        return self.references[0] if self.references else ""


@dataclass(frozen=True)
class Score:
    """A metric's verdict on one sample. ``value is None`` means missing."""

    value: float | None
    reason: str | None = None
    """Why (a judge's explanation, which claim failed, ...)."""
    error: str | None = None
    """Set when ``value`` is None: what went wrong, in one line."""
    raw: str | None = None
    """The raw model text behind an LLM-based score (kept for missing values)."""
    details: Mapping[str, float | None] = field(default_factory=dict)
    """Sub-scores (a composite's parts, a judge's repeats, ...)."""

    @property
    def ok(self) -> bool:
        return self.value is not None

    @classmethod
    def missing(cls, error: str, raw: str | None = None) -> Score:
        return cls(value=None, error=error, raw=raw)


def as_references(reference: str | Sequence[str] | None) -> tuple[str, ...]:
    """Accept one reference, a list of them, or None."""
    if reference is None:
        return ()
    if isinstance(reference, str):
        return (reference,)
    refs = tuple(reference)
    for r in refs:
        if not isinstance(r, str):
            raise TypeError(f"references must be strings, got {type(r).__name__}")
    return refs


@runtime_checkable
class Metric(Protocol):
    """What the evaluator needs of a metric."""

    name: str

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]: ...

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]: ...


class MetricBase(Configurable, ABC):
    """Base class: implement :meth:`score`; batch, async and aggregate come free."""

    name: str = "metric"
    description: str = ""
    higher_is_better: bool = True
    needs_llm: ClassVar[bool] = False
    """The constructor takes ``llm``: the metric factory passes the run's client
    (made on the first metric that declares this, never otherwise)."""

    @abstractmethod
    def score(self, sample: Sample) -> Score:
        """Score one sample. May raise; batch callers turn that into a missing value."""

    # -- single ---------------------------------------------------------------
    def evaluate(
        self,
        prediction: str,
        reference: str | Sequence[str] | None = None,
        *,
        question: str | None = None,
        contexts: Sequence[str] = (),
    ) -> Score:
        """Score one (prediction, reference[, context]) triple; raises on failure."""
        if not isinstance(prediction, str):
            raise TypeError(
                f"{self.name}: prediction must be a string, got {type(prediction).__name__}"
            )
        sample = Sample(prediction, as_references(reference), question, tuple(contexts))
        return self.score(sample)

    # -- batch ----------------------------------------------------------------
    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        """Score many samples; a sample that raises becomes a missing value."""
        return [self._safe_score(s) for s in samples]

    def _safe_score(self, sample: Sample) -> Score:
        try:
            return self.score(sample)
        except Exception as exc:  # noqa: BLE001 - one bad sample must not stop the batch
            return Score.missing(f"{type(exc).__name__}: {exc}")

    def evaluate_batch(
        self,
        predictions: Sequence[str],
        references: Sequence[str | Sequence[str] | None],
        *,
        questions: Sequence[str | None] | None = None,
        contexts: Sequence[Sequence[str]] | None = None,
    ) -> list[Score]:
        """Score parallel lists; lists of different lengths are an error (not a zip)."""
        n = len(predictions)
        for label, other in (
            ("references", references),
            ("questions", questions),
            ("contexts", contexts),
        ):
            if other is not None and len(other) != n:
                raise ValueError(
                    f"{self.name}: {n} predictions but {len(other)} {label}; "
                    "pass lists of the same length"
                )
        samples = [
            Sample(
                prediction=p,
                references=as_references(references[i]),
                question=questions[i] if questions is not None else None,
                contexts=tuple(contexts[i]) if contexts is not None else (),
                id=str(i),
            )
            for i, p in enumerate(predictions)
        ]
        return self.score_samples(samples)

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        """Awaitable batch; the default runs :meth:`score_samples` in a worker thread."""
        return await asyncio.to_thread(self.score_samples, samples)

    # -- aggregate ------------------------------------------------------------
    def aggregate(self, scores: Iterable[Score | float | None], **options: Any) -> Aggregate:
        return aggregate(scores, **options)


@dataclass(frozen=True)
class Aggregate:
    """Summary of one metric over a batch; missing values are counted, not averaged."""

    mean: float | None
    std: float | None
    """Sample standard deviation (ddof=1); None with fewer than two values."""
    min: float | None
    max: float | None
    count: int
    """Values that were present."""
    missing: int
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.95

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "count": self.count,
            "missing": self.missing,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def present_values(scores: Iterable[Score | float | None]) -> tuple[list[float], int]:
    """The finite values of ``scores`` and how many were missing (None or NaN)."""
    values: list[float] = []
    missing = 0
    for s in scores:
        v = s.value if isinstance(s, Score) else s
        if v is None or (isinstance(v, float) and math.isnan(v)):
            missing += 1
        else:
            values.append(float(v))
    return values, missing


def aggregate(
    scores: Iterable[Score | float | None],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Aggregate:
    """Mean, std, min, max, count and a percentile-bootstrap CI of the mean.

    Missing values (None, NaN, missing Scores) are excluded and counted. The CI
    is omitted (None) when ``n_resamples`` is 0 or fewer than two values exist.
    """
    values, missing = present_values(scores)
    if not values:
        return Aggregate(None, None, None, None, 0, missing, confidence=confidence)
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    low = high = None
    if n > 1 and n_resamples > 0:
        from retrieval_bench.metrics.stats import bootstrap_ci

        ci = bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
        low, high = ci.low, ci.high
    return Aggregate(mean, std, min(values), max(values), n, missing, low, high, confidence)

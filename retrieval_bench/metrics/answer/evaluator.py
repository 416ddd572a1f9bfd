"""The evaluator: many metrics over many samples, concurrently, never aborting
(docs/metrics.md#metric-interface-and-evaluator).

It first unifies the sample format
(:func:`retrieval_bench.metrics.answer.samples.to_sample` converts every accepted
row shape), then calls every metric. Metrics run concurrently — each
metric's :meth:`~retrieval_bench.contracts.answer_metric.MetricBase.ascore_samples` is
one asyncio task, at most ``max_concurrency`` at a time (LLM metrics send
their whole batch to the model inside that call) — and nothing a metric does
stops the run:

* a sample a metric cannot score is a missing value carrying its error
  (``MetricBase.score_samples`` already does this per sample);
* a metric that raises for the whole batch, or returns the wrong number of
  scores, leaves every sample missing with that error;
* a NaN or infinite value becomes missing (as :func:`base.present_values`
  would count it), with the error saying so;
* a row that cannot be normalised is missing for every metric.

Metrics with a ``corpus_score(samples) -> float`` method (BLEU) also get a
corpus-level score next to the mean of their sentence scores.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import math
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from retrieval_bench.contracts.answer_metric import Aggregate, Metric, Sample, Score, aggregate
from retrieval_bench.metrics.answer.samples import SampleError, check_unique_ids, to_sample
from retrieval_bench.text_table import aligned


def nan_if_missing(value: float | None) -> float:
    """``value``, or NaN for a missing one (the results database stores NaN as NULL)."""
    return math.nan if value is None else value


class Failure(NamedTuple):
    """One missing value: which sample, which metric, why, and the raw model text."""

    sample_id: str
    metric: str
    error: str
    raw: str | None = None


@dataclass
class EvaluationResult:
    """Scores of every metric on every sample, their aggregates and failures."""

    sample_ids: list[str]
    metric_names: list[str]
    scores: dict[str, list[Score]]
    """metric → one :class:`Score` per sample, in ``sample_ids`` order."""
    aggregates: dict[str, Aggregate]
    corpus: dict[str, float] = field(default_factory=dict)
    """metric → corpus-level score, for metrics that have ``corpus_score``."""
    corpus_errors: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    samples: list[Sample | None] = field(default_factory=list)
    """The normalised samples (None where a row could not be normalised)."""

    @property
    def all_failed(self) -> bool:
        """True when no metric produced a value for any sample."""
        return all(a.count == 0 for a in self.aggregates.values())

    def values(self, metric: str) -> dict[str, float | None]:
        """sample id → value (None when missing) for one metric."""
        return {sid: s.value for sid, s in zip(self.sample_ids, self.scores[metric], strict=True)}

    def stored_values(self) -> dict[str, dict[str, float]]:
        """sample id → metric → value, NaN where missing: the per-query rows of the
        ``answer`` stage in the results database."""
        return {
            sid: {m: nan_if_missing(self.scores[m][i].value) for m in self.metric_names}
            for i, sid in enumerate(self.sample_ids)
        }

    def rows(self) -> list[dict[str, Any]]:
        """One dict per sample: ``id``, ``metrics`` (name → value or None),
        ``errors`` and ``reasons`` (name → text, only where there is one)."""
        out = []
        for i, sid in enumerate(self.sample_ids):
            per = {m: self.scores[m][i] for m in self.metric_names}
            out.append(
                {
                    "id": sid,
                    "metrics": {m: s.value for m, s in per.items()},
                    "errors": {m: s.error for m, s in per.items() if s.value is None},
                    "reasons": {m: s.reason for m, s in per.items() if s.reason},
                }
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary: per-metric aggregates (+ corpus score) and failures."""
        return {
            "samples": len(self.sample_ids),
            "seconds": self.seconds,
            "metrics": {
                m: {**self.aggregates[m].as_dict(), "corpus": self.corpus.get(m)}
                for m in self.metric_names
            },
            "corpus_errors": dict(self.corpus_errors),
            "failures": [f._asdict() for f in self.failures],
        }

    def table(self) -> str:
        """A text table: metric, mean, std, min, max, count, missing, CI, corpus."""
        confidence = next(iter(self.aggregates.values())).confidence if self.aggregates else 0.95
        header = ["metric", "mean", "std", "min", "max", "count", "missing"]
        header += [f"{confidence:.0%} CI", "corpus"]
        body = []
        for m in self.metric_names:
            a = self.aggregates[m]
            ci = "-" if a.ci_low is None else f"[{_fmt(a.ci_low)}, {_fmt(a.ci_high)}]"
            corpus = "error" if m in self.corpus_errors else _fmt(self.corpus.get(m))
            cells = [_fmt(a.mean), _fmt(a.std), _fmt(a.min), _fmt(a.max)]
            body.append([m, *cells, str(a.count), str(a.missing), ci, corpus])
        lines = aligned(header, body).split("\n")
        for m, err in self.corpus_errors.items():
            lines.append(f"{m}: corpus score failed: {err}")
        return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


@dataclass(frozen=True)
class _MetricOutcome:
    scores: list[Score]
    corpus: float | None = None
    corpus_error: str | None = None


class Evaluator:
    """Run ``metrics`` over samples (any shape :func:`to_sample` accepts).

    ``max_concurrency`` bounds how many metrics score at the same time;
    ``confidence``, ``n_resamples`` and ``seed`` go to the bootstrap CI of
    each metric's mean (:func:`retrieval_bench.contracts.answer_metric.aggregate`).
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        *,
        max_concurrency: int = 4,
        confidence: float = 0.95,
        n_resamples: int = 2000,
        seed: int = 0,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        names = [m.name for m in metrics]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"metric names must be unique, {', '.join(repeated)} repeats; "
                "give each metric its own id"
            )
        self.metrics = list(metrics)
        self.max_concurrency = max_concurrency
        self.confidence = confidence
        self.n_resamples = n_resamples
        self.seed = seed

    def run(self, samples_or_rows: Iterable[Any]) -> EvaluationResult:
        """Synchronous :meth:`arun`. Called from inside a running event loop it
        runs on a fresh loop in a worker thread (blocking the caller until done)."""
        rows = list(samples_or_rows)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(rows))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluator") as pool:
            return pool.submit(lambda: asyncio.run(self.arun(rows))).result()

    async def arun(self, samples_or_rows: Iterable[Any]) -> EvaluationResult:
        """Normalise the rows, score them with every metric concurrently, aggregate.

        Raises ``ValueError`` only for repeated sample ids; everything else that
        goes wrong becomes a missing value with its error.
        """
        started = time.perf_counter()
        samples: list[Sample | None] = []
        bad_rows: dict[int, Failure] = {}
        for i, row in enumerate(samples_or_rows):
            try:
                samples.append(to_sample(row, i))
            except SampleError as exc:
                samples.append(None)
                bad_rows[i] = Failure(str(i), "*", f"bad sample: {exc}", _raw_row(row))
        ids = [s.id if s is not None else str(i) for i, s in enumerate(samples)]
        check_unique_ids(ids)
        valid = [s for s in samples if s is not None]

        semaphore = asyncio.Semaphore(self.max_concurrency)
        outcomes = await asyncio.gather(*(self._score(m, valid, semaphore) for m in self.metrics))

        result = EvaluationResult(ids, [m.name for m in self.metrics], {}, {}, samples=samples)
        for metric, outcome in zip(self.metrics, outcomes, strict=True):
            produced = iter(outcome.scores)
            scores = []
            for i, sid in enumerate(ids):
                if i in bad_rows:
                    score = Score.missing(bad_rows[i].error, bad_rows[i].raw)
                else:
                    score = next(produced)
                scores.append(score)
                if score.value is None:
                    error = score.error or "missing value"
                    result.failures.append(Failure(sid, metric.name, error, score.raw))
            result.scores[metric.name] = scores
            result.aggregates[metric.name] = self._aggregate(metric, scores)
            if outcome.corpus is not None:
                result.corpus[metric.name] = outcome.corpus
            if outcome.corpus_error is not None:
                result.corpus_errors[metric.name] = outcome.corpus_error
        result.seconds = time.perf_counter() - started
        return result

    async def _score(
        self, metric: Metric, samples: list[Sample], semaphore: asyncio.Semaphore
    ) -> _MetricOutcome:
        if not samples:
            return _MetricOutcome([])
        async with semaphore:
            try:
                scores = _checked(metric.name, await _ascore(metric, samples), len(samples))
            except Exception as exc:  # noqa: BLE001 - a broken metric must not stop the others
                error = f"{metric.name} failed on the whole batch: {type(exc).__name__}: {exc}"
                scores = [Score.missing(error) for _ in samples]
            corpus_score = getattr(metric, "corpus_score", None)
            if not callable(corpus_score):
                return _MetricOutcome(scores)
            try:
                value = float(await asyncio.to_thread(corpus_score, samples))
            except Exception as exc:  # noqa: BLE001
                return _MetricOutcome(scores, corpus_error=f"{type(exc).__name__}: {exc}")
            if not math.isfinite(value):
                return _MetricOutcome(scores, corpus_error=f"corpus score is {value}")
            return _MetricOutcome(scores, corpus=value)

    def _aggregate(self, metric: Metric, scores: list[Score]) -> Aggregate:
        options: dict[str, Any] = {
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
        }
        own = getattr(metric, "aggregate", None)
        result = own(scores, **options) if callable(own) else aggregate(scores, **options)
        if not isinstance(result, Aggregate):
            return aggregate(scores, **options)
        return result


async def _ascore(metric: Metric, samples: list[Sample]) -> Any:
    """The metric's awaitable batch call; a sync-only metric runs in a worker thread."""
    ascore = getattr(metric, "ascore_samples", None)
    if ascore is not None and inspect.iscoroutinefunction(ascore):
        return await ascore(samples)
    return await asyncio.to_thread(metric.score_samples, samples)


def _checked(name: str, scores: Any, n: int) -> list[Score]:
    """The metric's scores as a list of n :class:`Score`; non-finite values become missing."""
    if not isinstance(scores, Sequence) or isinstance(scores, str):
        raise TypeError(f"{name} returned {type(scores).__name__}, not a list of scores")
    if len(scores) != n:
        raise ValueError(f"{name} returned {len(scores)} scores for {n} samples")
    return [_as_score(s) for s in scores]


def _as_score(item: Any) -> Score:
    if isinstance(item, Score):
        score = item
    elif isinstance(item, int | float) and not isinstance(item, bool):
        score = Score(float(item))
    elif item is None:
        return Score.missing("metric returned no value")
    else:
        return Score.missing(f"metric returned {type(item).__name__}, not a Score")
    if score.value is not None and not math.isfinite(score.value):
        error = score.error or f"metric returned a non-finite value ({score.value})"
        return dataclasses.replace(score, value=None, error=error)
    return score


def _raw_row(row: Any) -> str:
    """A short printable form of a row that could not be normalised."""
    try:
        text = json.dumps(row, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(row)
    return text if len(text) <= 500 else text[:497] + "..."

"""Declaring a (composite) metric in code (docs/metrics.md#composite-metrics).

A metric-builder DSL, as a fluent chain::

    quality = (
        MetricBuilder()
        .exact_match(weight=0.3, ignore_case=True)
        .token_f1(weight=0.3)
        .llm_judge(llm, weight=0.4)
        .custom(lambda pred, ref: float(ref in pred), name="contains", weight=0.1)
        .aggregation("weighted_mean")
        .build(name="quality")
    )

Named methods are thin wrappers over :meth:`MetricBuilder.part`, which
creates any metric registered under ``"metrics"`` by name, so no constructor
logic is repeated here. :meth:`MetricBuilder.build` returns the single part
itself when there is one and a
:class:`~retrieval_bench.metrics.answer.composite.Composite` otherwise; weights are
validated and normalised there.

:class:`FunctionMetric` turns a plain function into a metric: either
``fn(prediction, reference) -> float`` (called once per reference, best
value kept — as exact match and token F1 treat several references) or
``fn(sample) -> float`` taking the whole :class:`Sample`.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from typing import Any, Self

from retrieval_bench.contracts.answer_metric import Metric, MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageServices
from retrieval_bench.contracts.registry import METRICS
from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.composite import (
    AGGREGATIONS,
    MISSING_POLICIES,
    Aggregation,
    Composite,
    MissingPolicy,
)

FunctionResult = float | int | bool | Score | None


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` has exactly one required positional parameter (a Sample)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return False
    required = [p for p in params if p.kind in positional and p.default is p.empty]
    return len(required) == 1


def _function_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", "")
    return name if name and name.isidentifier() else "custom"


class FunctionMetric(MetricBase):
    """A metric computed by a plain function.

    ``takes_sample`` says which form ``fn`` has; by default it is inferred
    from the signature (one required positional parameter → the Sample form).
    The function may return a number (bools count as 1/0), a :class:`Score`,
    or None (a missing value).
    """

    def __init__(
        self,
        fn: Callable[..., FunctionResult],
        *,
        name: str | None = None,
        takes_sample: bool | None = None,
        higher_is_better: bool = True,
        description: str = "",
    ) -> None:
        if not callable(fn):
            raise TypeError(f"custom metric: expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or _function_name(fn)
        self.takes_sample = _takes_one_argument(fn) if takes_sample is None else takes_sample
        self.higher_is_better = higher_is_better
        self.description = description or f"custom function {_function_name(fn)}"

    def score(self, sample: Sample) -> Score:
        if self.takes_sample:
            return self._as_score(self.fn(sample))
        results = [self._as_score(self.fn(sample.prediction, ref)) for ref in sample.references]
        if not results:
            return self._as_score(self.fn(sample.prediction, ""))
        present = [s for s in results if s.value is not None and not math.isnan(s.value)]
        if not present:
            return results[0]
        return max(present, key=lambda s: s.value if s.value is not None else -math.inf)

    def _as_score(self, result: object) -> Score:
        if isinstance(result, Score):
            return result
        if result is None:
            return Score.missing(f"{self.name}: the function returned None")
        if isinstance(result, bool | int | float):
            return Score(float(result))
        raise TypeError(
            f"{self.name}: the function returned a {type(result).__name__}; "
            "return a number, a Score or None"
        )


class MetricBuilder:
    """Collects weighted parts, then :meth:`build` makes one metric of them."""

    def __init__(self) -> None:
        self._parts: list[Metric] = []
        self._weights: list[float] = []
        self._aggregation: Aggregation = "weighted_mean"
        self._missing: MissingPolicy = "fail"

    # -- adding parts -------------------------------------------------------------
    def add(self, metric: Metric, *, weight: float = 1.0) -> Self:
        """Add an already-built metric."""
        if not isinstance(metric, Metric):
            raise TypeError(f"MetricBuilder.add: {type(metric).__name__} is not a metric")
        weight = float(weight)
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{metric.name}: weight {weight} must be finite and >= 0")
        self._parts.append(metric)
        self._weights.append(weight)
        return self

    def part(
        self,
        metric: str,
        /,
        *,
        weight: float = 1.0,
        label: str | None = None,
        name: str | None = None,
        llm: LLM | None = None,
        **params: Any,
    ) -> Self:
        """Add the metric registered as ``metric``, made with ``params`` (its ``Params``)
        and ``llm`` (for a metric that declares ``needs_llm``); ``name`` or ``label``
        renames it (``label`` wins)."""
        built = METRICS.create(metric, params, StageServices(llm=llm))
        renamed = label if label is not None else name
        if renamed is not None:
            built.name = renamed
        return self.add(built, weight=weight)

    def custom(
        self,
        fn: Callable[..., FunctionResult],
        *,
        name: str | None = None,
        weight: float = 1.0,
        takes_sample: bool | None = None,
    ) -> Self:
        """Add a plain function as a metric (see :class:`FunctionMetric`)."""
        return self.add(FunctionMetric(fn, name=name, takes_sample=takes_sample), weight=weight)

    def exact_match(self, *, weight: float = 1.0, **params: Any) -> Self:
        return self.part("exact_match", weight=weight, **params)

    def token_f1(self, *, weight: float = 1.0, **params: Any) -> Self:
        return self.part("token_f1", weight=weight, **params)

    def bleu(self, *, weight: float = 1.0, **params: Any) -> Self:
        return self.part("bleu", weight=weight, **params)

    def rouge(self, variant: str = "rougeL", *, weight: float = 1.0, **params: Any) -> Self:
        """``variant``: rouge1, rouge2, rougeL or rougeLsum."""
        return self.part(variant, weight=weight, **params)

    def llm_judge(self, llm: LLM, *, weight: float = 1.0, **params: Any) -> Self:
        return self.part("llm_judge", weight=weight, llm=llm, **params)

    # -- how to combine -------------------------------------------------------------
    def aggregation(self, aggregation: Aggregation) -> Self:
        """weighted_mean (default), min, max or geometric_mean."""
        if aggregation not in AGGREGATIONS:
            raise ValueError(
                f"unknown aggregation {aggregation!r}; choose one of: {', '.join(AGGREGATIONS)}"
            )
        self._aggregation = aggregation
        return self

    def missing(self, policy: MissingPolicy) -> Self:
        """What a part's missing value does: "fail" (default) or "skip"."""
        if policy not in MISSING_POLICIES:
            raise ValueError(f"unknown missing policy {policy!r}; choose 'skip' or 'fail'")
        self._missing = policy
        return self

    def build(self, name: str | None = None) -> Metric:
        """The single part itself (a renamed shallow copy when ``name`` is given), or a
        :class:`Composite` named ``name`` (default "composite") over every part."""
        if not self._parts:
            raise ValueError("MetricBuilder.build: no parts; add at least one metric")
        if len(self._parts) == 1:
            only = self._parts[0]
            if name is None or name == only.name:
                return only
            renamed = copy.copy(only)
            renamed.name = name
            return renamed
        return Composite(
            parts=self._parts,
            weights=self._weights,
            aggregation=self._aggregation,
            name=name or "composite",
            missing=self._missing,
        )

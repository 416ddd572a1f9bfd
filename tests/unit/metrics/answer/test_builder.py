"""MetricBuilder and FunctionMetric: single part vs composite, registry parts, functions."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.registry import METRICS
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.builder import FunctionMetric, MetricBuilder
from retrieval_bench.metrics.answer.composite import Composite
from tests.fakes.llm import ScriptedLLM


class Contains(MetricBase):
    """1.0 when the (optionally lowercased) reference occurs in the prediction."""

    name = "contains"

    class Params(StageParams):
        ignore_case: bool = False

    def __init__(self, params: Contains.Params | None = None, /, **values: Any) -> None:
        self.ignore_case = self.Params.of(params, **values).ignore_case

    def score(self, sample: Sample) -> Score:
        pred, ref = sample.prediction, sample.reference
        if self.ignore_case:
            pred, ref = pred.lower(), ref.lower()
        return Score(float(ref in pred))


class Graded(MetricBase):
    """Stands in for an LLM judge: keeps the llm it was given; scores 0.5."""

    needs_llm = True

    def __init__(
        self, params: StageParams | None = None, /, *, llm: LLM | None = None, name: str = "graded"
    ) -> None:
        self.llm = llm
        self.name = name

    def score(self, sample: Sample) -> Score:
        return Score(0.5)


@pytest.fixture
def test_registry() -> Iterator[None]:
    """A metrics registry holding only test metrics (plus composite), restored afterwards."""
    with METRICS.scoped(keep=["composite"]):
        METRICS.register("exact_match")(Contains)  # a stand-in under the real name
        METRICS.register("contains")(Contains)
        METRICS.register("llm_judge")(Graded)
        yield


def test_single_part_returns_the_part_itself() -> None:
    part = Contains()
    assert MetricBuilder().add(part, weight=0.3).build() is part


def test_single_part_with_a_name_is_a_renamed_copy() -> None:
    part = Contains()
    built = MetricBuilder().add(part).build(name="quality")
    assert built is not part and built.name == "quality" and part.name == "contains"
    assert built.score_samples([Sample("a b", ("b",))])[0].value == 1.0


def test_several_parts_make_a_weighted_composite() -> None:
    built = (
        MetricBuilder()
        .add(Contains(), weight=0.3)
        .add(Contains(ignore_case=True), weight=0.3)
        .custom(lambda pred, ref: len(pred) / 10, name="length", weight=0.4)
        .build(name="quality")
    )
    assert isinstance(built, Composite)
    assert built.name == "quality"
    assert built.part_names == ("contains", "contains_2", "length")
    assert built.weights == pytest.approx((0.3, 0.3, 0.4))
    # "The Cat" vs "cat": contains 0, ignore-case contains 1, length 0.7
    score = built.score(Sample("The Cat", ("cat",)))
    assert score.value == pytest.approx(0.3 * 0.0 + 0.3 * 1.0 + 0.4 * 0.7)
    assert score.details == {"contains": 0.0, "contains_2": 1.0, "length": pytest.approx(0.7)}


def test_aggregation_and_missing_policy_reach_the_composite() -> None:
    built = (
        MetricBuilder()
        .custom(lambda p, r: 0.9, name="a")
        .custom(lambda p, r: None, name="b")
        .custom(lambda p, r: 0.3, name="c")
        .aggregation("min")
        .missing("skip")
        .build()
    )
    assert isinstance(built, Composite)
    assert (built.aggregation, built.missing, built.name) == ("min", "skip", "composite")
    assert built.score(Sample("x", ("y",))).value == pytest.approx(0.3)


def test_builder_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no parts"):
        MetricBuilder().build()
    with pytest.raises(ValueError, match="weight -1.0 must be finite and >= 0"):
        MetricBuilder().add(Contains(), weight=-1)
    with pytest.raises(ValueError, match="weight nan"):
        MetricBuilder().add(Contains(), weight=math.nan)
    with pytest.raises(ValueError, match="unknown aggregation 'mean'"):
        MetricBuilder().aggregation("mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown missing policy"):
        MetricBuilder().missing("drop")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a metric"):
        MetricBuilder().add(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="all weights are zero"):
        MetricBuilder().add(Contains(), weight=0).add(Contains(), weight=0).build()


@pytest.mark.usefixtures("test_registry")
def test_named_methods_delegate_to_the_registry() -> None:
    llm = ScriptedLLM("5")
    built = (
        MetricBuilder()
        .exact_match(weight=0.3, ignore_case=True)
        .part("contains", weight=0.3, label="contains_cs")
        .llm_judge(llm, weight=0.4, name="judge")
        .build(name="quality")
    )
    assert isinstance(built, Composite)
    assert built.part_names == ("contains", "contains_cs", "judge")
    first, second, judge = built.parts
    assert isinstance(first, Contains) and first.ignore_case
    assert isinstance(second, Contains) and not second.ignore_case
    assert isinstance(judge, Graded) and judge.llm is llm
    assert built.score(Sample("The Cat", ("cat",))).value == pytest.approx(0.3 + 0.0 + 0.2)


@pytest.mark.usefixtures("test_registry")
def test_registry_errors_name_the_metric_and_parameter() -> None:
    with pytest.raises(ConfigError, match="unknown metric 'nope'"):
        MetricBuilder().part("nope")
    with pytest.raises(
        ConfigError,
        match="metric 'exact_match': ignore_kase: unknown parameter 'ignore_kase'; "
        "valid parameters: ignore_case",
    ):
        MetricBuilder().exact_match(ignore_kase=True)


# -- FunctionMetric ------------------------------------------------------------------------
def test_function_of_prediction_and_reference_keeps_the_best_reference() -> None:
    def overlap(prediction: str, reference: str) -> float:
        return len(set(prediction.split()) & set(reference.split())) / 2

    metric = FunctionMetric(overlap)
    assert metric.name == "overlap" and not metric.takes_sample
    assert metric.evaluate("a b", ["a", "a b", "c"]).value == 1.0
    assert metric.evaluate("a b", "c").value == 0.0
    assert metric.evaluate("a b").value == 0.0  # no reference: called with ""


def test_function_of_a_sample() -> None:
    metric = FunctionMetric(lambda s: float(s.question == "q?"), name="asked")
    assert metric.takes_sample
    assert metric.evaluate("p", "r", question="q?").value == 1.0
    assert metric.evaluate("p", "r").value == 0.0


def test_function_results_bool_score_none_and_bad_type() -> None:
    assert FunctionMetric(lambda p, r: p == r).evaluate("x", "x").value == 1.0
    assert FunctionMetric(lambda p, r: p == r).name == "custom"
    reasoned = FunctionMetric(lambda p, r: Score(0.25, reason="why"))
    assert reasoned.evaluate("x", "y") == Score(0.25, reason="why")
    none = FunctionMetric(lambda p, r: None, name="n").evaluate("x", "y")
    assert none.value is None and none.error == "n: the function returned None"
    bad = FunctionMetric(lambda p, r: "high", name="bad")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="bad: the function returned a str"):
        bad.evaluate("x", "y")
    [missing] = bad.score_samples([Sample("x", ("y",))])
    assert missing.value is None and "returned a str" in (missing.error or "")


def test_function_form_can_be_forced() -> None:
    def either(*args: object) -> float:
        return float(len(args))

    assert FunctionMetric(either).evaluate("p", "r").value == 2.0
    assert FunctionMetric(either, takes_sample=True).evaluate("p", "r").value == 1.0
    with pytest.raises(TypeError, match="expected a function"):
        FunctionMetric(3.0)  # type: ignore[arg-type]

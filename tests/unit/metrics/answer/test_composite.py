"""Composite metric: hand-computed aggregations, weights, missing parts, batching, async."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.metrics.answer.composite import Composite, normalise_weights, unique_names


class Fixed(MetricBase):
    """Scores every sample with one value (None = missing with ``error``)."""

    def __init__(
        self,
        name: str,
        value: float | None,
        error: str = "no value",
        reason: str | None = None,
        details: Mapping[str, float | None] | None = None,
    ) -> None:
        self.name = name
        self.value = value
        self.error = error
        self.reason = reason
        self.details = dict(details or {})

    def score(self, sample: Sample) -> Score:
        if self.value is None:
            return Score(None, error=self.error, raw="raw text")
        return Score(self.value, reason=self.reason, details=self.details)


class ByPrediction(MetricBase):
    """Value looked up by the prediction text; an unknown prediction raises."""

    def __init__(self, name: str, table: Mapping[str, float]) -> None:
        self.name = name
        self.table = dict(table)

    def score(self, sample: Sample) -> Score:
        return Score(self.table[sample.prediction])


class Counting(MetricBase):
    """Counts batch calls; records async start/finish order to prove concurrency."""

    def __init__(self, name: str, value: float, log: list[str] | None = None) -> None:
        self.name = name
        self.value = value
        self.batches: list[int] = []
        self.single_calls = 0
        self.log = log if log is not None else []

    def score(self, sample: Sample) -> Score:
        self.single_calls += 1
        return Score(self.value)

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        self.batches.append(len(samples))
        return [Score(self.value) for _ in samples]

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        self.log.append(f"start {self.name}")
        await asyncio.sleep(0)
        self.log.append(f"end {self.name}")
        return [Score(self.value) for _ in samples]


class Exploding(MetricBase):
    name = "exploding"

    def score(self, sample: Sample) -> Score:
        raise AssertionError("not used")

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        raise RuntimeError("server down")


def three_parts() -> list[MetricBase]:
    return [Fixed("a", 0.5), Fixed("b", 1.0), Fixed("c", 0.2)]


SAMPLE = Sample("pred", ("ref",))


# -- aggregations, hand-computed ------------------------------------------------------
@pytest.mark.parametrize(
    ("aggregation", "weights", "expected"),
    [
        ("weighted_mean", None, (0.5 + 1.0 + 0.2) / 3),
        ("weighted_mean", [2, 1, 1], 0.5 * 0.5 + 0.25 * 1.0 + 0.25 * 0.2),  # 0.55
        ("min", None, 0.2),
        ("max", None, 1.0),
        ("min", [5, 1, 1], 0.2),  # weights do not bend min/max
        ("max", [1, 1, 5], 1.0),
        ("geometric_mean", None, 0.1 ** (1 / 3)),  # (0.5·1·0.2)^(1/3) = 0.4641...
        ("geometric_mean", [2, 1, 1], 0.5**0.5 * 1.0**0.25 * 0.2**0.25),  # 0.4729...
    ],
)
def test_aggregations(aggregation: str, weights: list[float] | None, expected: float) -> None:
    metric = Composite(parts=three_parts(), weights=weights, aggregation=aggregation)
    assert metric.score(SAMPLE).value == pytest.approx(expected, abs=1e-12)


def test_hand_values_spelled_out() -> None:
    assert Composite(parts=three_parts(), weights=[2, 1, 1]).score(SAMPLE).value == pytest.approx(
        0.55
    )
    geo = Composite(parts=three_parts(), aggregation="geometric_mean").score(SAMPLE).value
    assert geo == pytest.approx(0.464158883, abs=1e-9)


def test_geometric_mean_zero_part_gives_zero_and_negative_is_an_error() -> None:
    zero = Composite(parts=[Fixed("a", 0.0), Fixed("b", 0.9)], aggregation="geometric_mean")
    assert zero.score(SAMPLE).value == 0.0
    negative = Composite(parts=[Fixed("a", -0.1), Fixed("b", 0.9)], aggregation="geometric_mean")
    with pytest.raises(ValueError, match="non-negative"):
        negative.score(SAMPLE)
    [batched] = negative.score_samples([SAMPLE])
    assert batched.value is None and "non-negative" in (batched.error or "")


def test_min_max_accept_scores_outside_unit_interval() -> None:
    parts = [Fixed("a", -2.0), Fixed("b", 3.0)]
    assert Composite(parts=parts, aggregation="min").score(SAMPLE).value == -2.0
    assert Composite(parts=parts, aggregation="max").score(SAMPLE).value == 3.0
    assert Composite(parts=parts).score(SAMPLE).value == pytest.approx(0.5)


def test_zero_weight_part_takes_no_part() -> None:
    parts = [Fixed("low", 0.1), Fixed("high", 0.8)]
    assert Composite(parts=parts, weights=[0, 1], aggregation="min").score(SAMPLE).value == 0.8
    geo = Composite(
        parts=[Fixed("z", 0.0), Fixed("h", 0.8)], weights=[0, 1], aggregation="geometric_mean"
    )
    assert geo.score(SAMPLE).value == pytest.approx(0.8)


# -- weights ------------------------------------------------------------------------
def test_weights_are_normalised_and_default_equal() -> None:
    assert Composite(parts=three_parts(), weights=[2, 1, 1]).weights == (0.5, 0.25, 0.25)
    assert Composite(parts=three_parts()).weights == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert normalise_weights([0.3, 0.3, 0.4], 3) == pytest.approx((0.3, 0.3, 0.4))


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        ([1, 1], "2 weights for 3 parts"),
        ([1, math.nan, 1], "weight 1 is nan; weights must be finite"),
        ([1, 1, math.inf], "weight 2 is inf"),
        ([1, -0.5, 1], "weight 1 is -0.5; weights must be >= 0"),
        ([0, 0, 0], "all weights are zero"),
    ],
)
def test_bad_weights_are_named(weights: list[float], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Composite(parts=three_parts(), weights=weights)


def test_bad_construction() -> None:
    with pytest.raises(ValueError, match="unknown aggregation 'median'"):
        Composite(parts=three_parts(), aggregation="median")
    with pytest.raises(ValueError, match="unknown missing policy"):
        Composite(parts=three_parts(), missing="ignore")
    with pytest.raises(ValueError, match="no parts"):
        Composite(parts=[])
    with pytest.raises(TypeError, match="part 1 is a str"):
        Composite(parts=[Fixed("a", 1.0), "bleu"])  # type: ignore[list-item]


# -- missing sub-scores -----------------------------------------------------------------
def test_missing_part_fails_the_composite_by_default() -> None:
    metric = Composite(parts=[Fixed("a", 0.5), Fixed("judge", None, error="unparseable")])
    score = metric.score(SAMPLE)
    assert score.value is None
    assert score.error == "judge: unparseable"
    assert score.raw == "raw text"
    assert score.details == {"a": 0.5, "judge": None}


def test_missing_part_is_skipped_and_weights_renormalised() -> None:
    parts = [Fixed("a", 0.5), Fixed("b", 1.0), Fixed("c", None)]
    metric = Composite(parts=parts, weights=[2, 1, 1], missing="skip")
    score = metric.score(SAMPLE)
    # c dropped: weights 2 and 1 renormalise to 2/3 and 1/3 → (2·0.5 + 1·1.0)/3
    assert score.value == pytest.approx(2 / 3)
    assert score.details == {"a": 0.5, "b": 1.0, "c": None}
    geo = Composite(parts=parts, weights=[2, 1, 1], aggregation="geometric_mean", missing="skip")
    assert geo.score(SAMPLE).value == pytest.approx(0.5 ** (2 / 3))


def test_all_parts_missing_with_skip_is_missing() -> None:
    metric = Composite(
        parts=[Fixed("a", None, error="x"), Fixed("b", None, error="y")], missing="skip"
    )
    score = metric.score(SAMPLE)
    assert score.value is None
    assert score.error == "no part scored (a: x; b: y)"


def test_nan_sub_score_counts_as_missing() -> None:
    metric = Composite(parts=[Fixed("a", math.nan), Fixed("b", 0.4)], missing="skip")
    assert metric.score(SAMPLE).value == pytest.approx(0.4)


def test_part_that_raises_per_sample_or_per_batch_is_missing() -> None:
    table = ByPrediction("t", {"known": 1.0})
    metric = Composite(parts=[table, Fixed("b", 0.5)])
    scores = metric.score_samples([Sample("known"), Sample("unknown")])
    assert scores[0].value == pytest.approx(0.75)
    assert scores[1].value is None and scores[1].error is not None
    assert scores[1].error.startswith("t: KeyError")
    whole = Composite(parts=[Exploding(), Fixed("b", 0.5)], missing="skip").score_samples(
        [SAMPLE] * 2
    )
    assert [s.value for s in whole] == [0.5, 0.5]
    assert whole[0].details["exploding"] is None


# -- details ---------------------------------------------------------------------------
def test_details_hold_every_sub_score_and_nested_details() -> None:
    inner = Composite(parts=[Fixed("x", 0.2), Fixed("y", 0.6)], name="inner")
    judge = Fixed("judge", 0.8, reason="mostly right", details={"repeat_1": 0.8})
    outer = Composite(parts=[inner, judge, Fixed("em", 1.0)])
    score = outer.score(SAMPLE)
    assert score.details == {
        "inner": pytest.approx(0.4),
        "inner.x": 0.2,
        "inner.y": 0.6,
        "judge": 0.8,
        "judge.repeat_1": 0.8,
        "em": 1.0,
    }
    assert score.reason == "judge: mostly right"
    assert score.value == pytest.approx((0.4 + 0.8 + 1.0) / 3)


def test_detailed_evaluate_maps_part_names_and_composite() -> None:
    metric = Composite(parts=three_parts(), weights=[2, 1, 1])
    out = metric.detailed_evaluate("pred", "ref")
    assert out == {"a": 0.5, "b": 1.0, "c": 0.2, "composite": pytest.approx(0.55)}


def test_duplicate_part_names_get_suffixes() -> None:
    metric = Composite(parts=[Fixed("em", 1.0), Fixed("em", 0.0), Fixed("composite", 0.5)])
    assert metric.part_names == ("em", "em_2", "composite_2")
    assert metric.detailed_evaluate("p") == {
        "em": 1.0,
        "em_2": 0.0,
        "composite_2": 0.5,
        "composite": pytest.approx(0.5),
    }
    assert unique_names(["a", "a_2", "a"]) == ["a", "a_2", "a_3"]


# -- batching and async ------------------------------------------------------------------
def test_score_samples_calls_each_part_once_per_batch() -> None:
    a, b = Counting("a", 0.2), Counting("b", 0.6)
    metric = Composite(parts=[a, b])
    samples = [Sample(f"p{i}", ("r",)) for i in range(5)]
    scores = metric.score_samples(samples)
    assert [s.value for s in scores] == pytest.approx([0.4] * 5)
    assert a.batches == [5] and b.batches == [5]
    assert a.single_calls == 0 and b.single_calls == 0
    assert metric.evaluate_batch(["x", "y"], ["r", "r"])[1].value == pytest.approx(0.4)
    assert a.batches == [5, 2]


def test_ascore_samples_runs_parts_concurrently() -> None:
    log: list[str] = []
    metric = Composite(parts=[Counting("a", 1.0, log), Counting("b", 0.0, log)], weights=[3, 1])
    scores = asyncio.run(metric.ascore_samples([SAMPLE, SAMPLE]))
    assert [s.value for s in scores] == [0.75, 0.75]
    # both parts started before either finished: they were awaited together
    assert log == ["start a", "start b", "end a", "end b"]


def test_ascore_samples_turns_a_failing_part_into_missing_values() -> None:
    metric = Composite(parts=[Exploding(), Fixed("b", 0.5)])
    scores = asyncio.run(metric.ascore_samples([SAMPLE]))
    assert scores[0].value is None
    assert scores[0].error == "exploding: RuntimeError: server down"


def test_composite_is_registered_under_its_name() -> None:
    assert registry.METRICS.get("composite") is Composite
    assert not Composite.needs_llm  # its parts get their own LLM, if they declare it

"""Bad input for every text metric: TypeError from evaluate, a missing value inside a batch."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.answer_metric import MetricBase, Sample

TEXT_METRICS = ("exact_match", "token_f1", "bleu", "rouge1", "rouge2", "rougeL", "rougeLsum")


def test_all_text_metrics_are_registered() -> None:
    assert set(TEXT_METRICS) <= set(registry.names("metrics"))


@pytest.mark.parametrize("name", TEXT_METRICS)
def test_non_string_prediction_raises_type_error(name: str) -> None:
    metric = registry.create("metrics", name)
    with pytest.raises(TypeError, match=f"{name}: prediction must be a string, got int"):
        metric.evaluate(42, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="references must be strings"):
        metric.evaluate("x", ["ok", 3])  # type: ignore[list-item]


@pytest.mark.parametrize("name", TEXT_METRICS)
def test_a_bad_sample_is_missing_and_the_batch_goes_on(name: str) -> None:
    metric: MetricBase = registry.create("metrics", name)
    samples = [
        Sample("the cat sat", ("the cat sat",)),
        Sample(None, ("the cat",)),  # type: ignore[arg-type]
        Sample("the cat", (b"bytes",)),  # type: ignore[arg-type]
        Sample("", ("",)),
    ]
    scores = metric.score_samples(samples)
    assert [s.ok for s in scores] == [True, False, False, True]
    assert scores[0].value == pytest.approx(1.0)
    assert scores[1].error is not None and scores[1].error.startswith("TypeError: ")
    assert "prediction must be a string, got NoneType" in scores[1].error
    assert scores[2].error is not None and "got bytes" in scores[2].error
    aggregate = metric.aggregate(scores, n_resamples=0)
    assert (aggregate.count, aggregate.missing) == (2, 2)


@pytest.mark.parametrize("name", TEXT_METRICS)
def test_evaluate_batch_with_a_bad_prediction(name: str) -> None:
    metric: MetricBase = registry.create("metrics", name)
    scores = metric.evaluate_batch(["a b", 7, "a b"], ["a b", "a b", ["x", "a b"]])  # type: ignore[list-item]
    assert [s.ok for s in scores] == [True, False, True]
    assert scores[0].value == pytest.approx(1.0) and scores[2].value == pytest.approx(1.0)


@pytest.mark.parametrize("name", TEXT_METRICS)
def test_empty_prediction_and_reference_give_numbers(name: str) -> None:
    metric: MetricBase = registry.create("metrics", name)
    for prediction, reference in (("", "abc"), ("abc", ""), ("", ""), ("", None)):
        value = metric.evaluate(prediction, reference).value
        assert isinstance(value, float) and 0.0 <= value <= 1.0

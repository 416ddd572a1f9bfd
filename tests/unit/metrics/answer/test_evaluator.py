"""The evaluator: normalisation, concurrency, and failures that never abort a run."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score, present_values
from retrieval_bench.metrics.answer.evaluator import EvaluationResult, Evaluator, Failure


class Exact(MetricBase):
    """1.0 when the prediction equals a reference."""

    name = "exact"

    def score(self, sample: Sample) -> Score:
        return Score(1.0 if sample.prediction in sample.references else 0.0)


class Length(MetricBase):
    """The prediction's length; raises on the prediction 'boom'."""

    name = "length"

    def score(self, sample: Sample) -> Score:
        if sample.prediction == "boom":
            raise RuntimeError("cannot measure boom")
        return Score(float(len(sample.prediction)), reason=f"{len(sample.prediction)} chars")


class Broken(MetricBase):
    """Fails for the whole batch (as an LLM metric whose server is down would)."""

    name = "broken"

    def score(self, sample: Sample) -> Score:
        return Score(0.0)

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        raise ConnectionError("server down")


class Returns(MetricBase):
    """Returns whatever list it was given, whatever the batch."""

    def __init__(self, name: str, values: list[Any]) -> None:
        self.name = name
        self.values = values

    def score(self, sample: Sample) -> Score:
        raise NotImplementedError

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Any]:  # type: ignore[override]
        return list(self.values)


ROWS = [
    {"id": "a", "prediction": "x", "reference": "x"},
    {"id": "b", "answer": "boom", "ground_truth": ["x", "boom"]},
    ("yz", "x"),
]


def evaluate(metrics: Sequence[Any], rows: Sequence[Any] = ROWS, **kw: Any) -> EvaluationResult:
    return Evaluator(metrics, n_resamples=0, **kw).run(rows)


def test_scores_every_metric_on_normalised_samples() -> None:
    result = evaluate([Exact(), Length()])
    assert result.sample_ids == ["a", "b", "2"]
    assert result.metric_names == ["exact", "length"]
    assert [s.value for s in result.scores["exact"]] == [1.0, 1.0, 0.0]
    assert result.values("length") == {"a": 1.0, "b": None, "2": 2.0}
    agg = result.aggregates["exact"]
    assert (agg.mean, agg.count, agg.missing) == (pytest.approx(2 / 3), 3, 0)
    assert (result.aggregates["length"].mean, result.aggregates["length"].missing) == (1.5, 1)
    assert result.samples[2] == Sample("yz", ("x",), id="2")
    assert not result.all_failed and result.seconds >= 0


def test_a_metric_raising_on_one_sample_leaves_it_missing_and_goes_on() -> None:
    result = evaluate([Length(), Exact()])
    boom = result.scores["length"][1]
    assert boom.value is None and boom.error == "RuntimeError: cannot measure boom"
    assert result.failures == [Failure("b", "length", "RuntimeError: cannot measure boom", None)]
    assert [s.value for s in result.scores["exact"]] == [1.0, 1.0, 0.0]


def test_a_metric_raising_for_the_whole_batch_is_missing_everywhere() -> None:
    result = evaluate([Broken(), Exact()])
    error = "broken failed on the whole batch: ConnectionError: server down"
    assert [s.error for s in result.scores["broken"]] == [error] * 3
    assert [(f.sample_id, f.metric) for f in result.failures] == [
        ("a", "broken"),
        ("b", "broken"),
        ("2", "broken"),
    ]
    agg = result.aggregates["broken"]
    assert (agg.mean, agg.count, agg.missing) == (None, 0, 3)
    assert result.aggregates["exact"].count == 3 and not result.all_failed


def test_every_metric_failing_everywhere_is_all_failed() -> None:
    assert evaluate([Broken()]).all_failed


def test_wrong_number_of_scores_is_a_whole_batch_failure() -> None:
    result = evaluate([Returns("short", [1.0])])
    assert {s.error for s in result.scores["short"]} == {
        "short failed on the whole batch: ValueError: short returned 1 scores for 3 samples"
    }


def test_nan_and_infinite_values_become_missing() -> None:
    nan = float("nan")
    values = [Score(nan, reason="why"), 0.5, Score(math.inf)]
    result = evaluate([Returns("odd", values)])
    scores = result.scores["odd"]
    assert [s.value for s in scores] == [None, 0.5, None]
    assert scores[0].error == "metric returned a non-finite value (nan)"
    assert scores[0].reason == "why"  # the rest of the verdict is kept
    assert scores[2].error == "metric returned a non-finite value (inf)"
    # the same rule as base.present_values applies to what the metric returned
    assert present_values([nan, 0.5]) == ([0.5], 1)
    agg = result.aggregates["odd"]
    assert (agg.mean, agg.count, agg.missing) == (0.5, 1, 2)


def test_plain_numbers_and_junk_in_a_metric_result() -> None:
    result = evaluate([Returns("mixed", [1, None, "x"])])
    assert [s.value for s in result.scores["mixed"]] == [1.0, None, None]
    assert result.scores["mixed"][1].error == "metric returned no value"
    assert result.scores["mixed"][2].error == "metric returned str, not a Score"


def test_a_bad_row_is_missing_for_every_metric_and_the_rest_is_scored() -> None:
    rows = [{"id": "a", "prediction": "x", "reference": "x"}, {"id": "b", "reference": "r"}]
    result = evaluate([Exact(), Length()], rows)
    assert result.sample_ids == ["a", "1"]
    assert result.samples[1] is None
    assert result.values("exact") == {"a": 1.0, "1": None}
    bad = [f for f in result.failures if f.sample_id == "1"]
    assert [f.metric for f in bad] == ["exact", "length"]
    assert bad[0].error.startswith("bad sample: row 1: no prediction")
    assert bad[0].raw == '{"id": "b", "reference": "r"}'


def test_repeated_sample_ids_and_metric_names_are_errors() -> None:
    with pytest.raises(ValueError, match="duplicate sample id 'a'"):
        evaluate(
            [Exact()], [("x", "x"), {"id": "a", "prediction": "p"}, {"id": "a", "output": "q"}]
        )
    with pytest.raises(ValueError, match="metric names must be unique, exact repeats"):
        Evaluator([Exact(), Exact()])
    with pytest.raises(ValueError, match="max_concurrency must be at least 1"):
        Evaluator([Exact()], max_concurrency=0)


def test_no_rows() -> None:
    result = evaluate([Exact()], [])
    assert result.sample_ids == [] and result.scores == {"exact": []}
    assert result.aggregates["exact"].count == 0


# ------------------------------------------------------------- concurrency
class Rendezvous(MetricBase):
    """Scores 1.0 only once the other metric has started too: proof of overlap."""

    def __init__(self, name: str, mine: asyncio.Event, other: asyncio.Event) -> None:
        self.name, self.mine, self.other = name, mine, other

    def score(self, sample: Sample) -> Score:
        raise NotImplementedError

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        self.mine.set()
        # without overlap this would wait forever; the timeout only turns a hang into a failure
        await asyncio.wait_for(self.other.wait(), timeout=30)
        return [Score(1.0) for _ in samples]


def test_two_slow_metrics_run_at_the_same_time() -> None:
    async def main() -> EvaluationResult:
        a, b = asyncio.Event(), asyncio.Event()
        metrics = [Rendezvous("a", a, b), Rendezvous("b", b, a)]
        return await Evaluator(metrics, max_concurrency=2, n_resamples=0).arun(ROWS)

    result = asyncio.run(main())
    assert result.failures == []
    assert [s.value for s in result.scores["a"] + result.scores["b"]] == [1.0] * 6


class Counting(MetricBase):
    """Records how many metrics are inside ``ascore_samples`` at once."""

    def __init__(self, name: str, state: dict[str, int]) -> None:
        self.name, self.state = name, state

    def score(self, sample: Sample) -> Score:
        raise NotImplementedError

    async def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:
        self.state["active"] += 1
        self.state["peak"] = max(self.state["peak"], self.state["active"])
        for _ in range(5):  # give the other tasks every chance to start
            await asyncio.sleep(0)
        self.state["active"] -= 1
        return [Score(1.0) for _ in samples]


@pytest.mark.parametrize(("limit", "peak"), [(1, 1), (2, 2), (4, 4), (8, 4)])
def test_max_concurrency_bounds_the_metrics_running_at_once(limit: int, peak: int) -> None:
    state = {"active": 0, "peak": 0}
    metrics = [Counting(f"m{i}", state) for i in range(4)]
    result = evaluate(metrics, max_concurrency=limit)
    assert state == {"active": 0, "peak": peak}
    assert all(a.count == 3 for a in result.aggregates.values())


def test_run_works_inside_a_running_event_loop() -> None:
    async def main() -> EvaluationResult:
        return Evaluator([Exact()], n_resamples=0).run(ROWS)

    assert [s.value for s in asyncio.run(main()).scores["exact"]] == [1.0, 1.0, 0.0]


def test_sync_batch_metrics_are_run_too() -> None:
    class SyncOnly:
        name = "sync"

        def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
            return [Score(0.25) for _ in samples]

        def ascore_samples(self, samples: Sequence[Sample]) -> list[Score]:  # not awaitable
            return self.score_samples(samples)

    assert evaluate([SyncOnly()]).aggregates["sync"].mean == 0.25


# ----------------------------------------------------------------- corpus
class WithCorpus(Exact):
    name = "corpus_exact"

    def corpus_score(self, samples: Sequence[Sample]) -> float:
        return sum(len(s.prediction) for s in samples) / 10


class BadCorpus(Exact):
    name = "bad_corpus"

    def corpus_score(self, samples: Sequence[Sample]) -> float:
        raise ZeroDivisionError("empty corpus")


def test_corpus_scores_and_their_failures() -> None:
    result = evaluate([WithCorpus(), BadCorpus(), Exact()])
    assert result.corpus == {"corpus_exact": pytest.approx(0.7)}  # (1 + 4 + 2) / 10
    assert result.corpus_errors == {"bad_corpus": "ZeroDivisionError: empty corpus"}
    assert result.aggregates["bad_corpus"].count == 3  # per-sample scores still count
    table = result.table()
    assert "bad_corpus: corpus score failed: ZeroDivisionError: empty corpus" in table


# ----------------------------------------------------------------- output
def test_rows_table_and_json() -> None:
    result = evaluate([Exact(), Length()])
    assert result.rows() == [
        {
            "id": "a",
            "metrics": {"exact": 1.0, "length": 1.0},
            "errors": {},
            "reasons": {"length": "1 chars"},
        },
        {
            "id": "b",
            "metrics": {"exact": 1.0, "length": None},
            "errors": {"length": "RuntimeError: cannot measure boom"},
            "reasons": {},
        },
        {
            "id": "2",
            "metrics": {"exact": 0.0, "length": 2.0},
            "errors": {},
            "reasons": {"length": "2 chars"},
        },
    ]
    lines = result.table().splitlines()
    assert lines[0].split() == [
        "metric", "mean", "std", "min", "max", "count", "missing", "95%", "CI", "corpus",
    ]  # fmt: skip
    assert lines[2].split() == [
        "exact", "0.6667", "0.5774", "0.0000", "1.0000", "3", "0", "-", "-",
    ]  # fmt: skip
    assert lines[3].split() == [
        "length", "1.5000", "0.7071", "1.0000", "2.0000", "2", "1", "-", "-",
    ]  # fmt: skip
    data = json.loads(json.dumps(result.as_dict()))
    assert data["samples"] == 3
    assert data["metrics"]["length"]["missing"] == 1
    assert data["metrics"]["exact"]["corpus"] is None
    assert data["failures"] == [
        {"sample_id": "b", "metric": "length", "error": "RuntimeError: cannot measure boom",
         "raw": None}
    ]  # fmt: skip


def test_aggregates_carry_a_bootstrap_ci() -> None:
    result = Evaluator([Length()], n_resamples=200, seed=1).run(
        [("a", ""), ("abc", ""), ("abcdef", ""), ("ab", "")]
    )
    agg = result.aggregates["length"]
    assert agg.mean == 3.0
    assert agg.ci_low is not None and agg.ci_high is not None
    assert 1.0 <= agg.ci_low <= 3.0 <= agg.ci_high <= 6.0
    assert f"[{agg.ci_low:.4f}, {agg.ci_high:.4f}]" in result.table()


def test_evaluate_batch_rejects_lists_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="exact: 2 predictions but 1 references"):
        Exact().evaluate_batch(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="exact: 1 predictions but 2 questions"):
        Exact().evaluate_batch(["a"], ["a"], questions=["q1", "q2"])

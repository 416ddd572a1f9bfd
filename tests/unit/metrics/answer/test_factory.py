"""Metrics from names and config: CLI strings, specs, nesting, lazy LLM, files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.config import load_metric_specs
from retrieval_bench.contracts import registry
from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.composite import Composite
from retrieval_bench.metrics.answer.factory import (
    DEFAULT_TEXT_METRICS,
    as_spec,
    build_metric,
    build_metrics,
    needs_llm,
)
from retrieval_bench.metrics.answer.text.rouge import Rouge1
from retrieval_bench.specs import parse_metric_arg
from tests.fakes.llm import ScriptedLLM


class Contains(MetricBase):
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


class Scaled(MetricBase):
    """Prediction length / factor; a non-positive factor is refused."""

    class Params(StageParams):
        factor: float = 10.0

    def __init__(
        self, params: Scaled.Params | None = None, /, *, name: str = "scaled", **values: Any
    ) -> None:
        factor = self.Params.of(params, **values).factor
        if factor <= 0:
            raise ValueError(f"factor must be > 0, got {factor}")
        self.factor = factor
        self.name = name

    def score(self, sample: Sample) -> Score:
        return Score(len(sample.prediction) / self.factor)


class Graded(MetricBase):
    needs_llm = True

    class Params(StageParams):
        grade: float = 0.5

    def __init__(
        self, params: Graded.Params | None = None, /, *, llm: LLM | None = None, **values: Any
    ) -> None:
        self.llm = llm
        self.grade = self.Params.of(params, **values).grade
        self.name = "graded"

    def score(self, sample: Sample) -> Score:
        return Score(self.grade)


class NotAMetric:
    def __init__(self) -> None:
        self.name = "x"


def not_a_metric() -> Any:
    """A function factory that says it builds a Contains, but does not."""
    return NotAMetric()


@pytest.fixture
def test_registry() -> Iterator[None]:
    """A metrics registry holding only these test metrics (plus composite), restored after."""
    with registry.METRICS.scoped(keep=["composite"]):
        registry.METRICS.register("contains")(Contains)
        registry.METRICS.register("scaled")(Scaled)
        registry.METRICS.register("graded")(Graded)
        registry.METRICS.register("not_a_metric", returns=Contains)(not_a_metric)
        yield


class CountingProvider:
    def __init__(self) -> None:
        self.calls = 0
        self.llm = ScriptedLLM("5")

    def __call__(self) -> LLM:
        self.calls += 1
        return self.llm


# -- the CLI form ------------------------------------------------------------------------
def test_parse_metric_arg_plain_name_and_typed_values() -> None:
    assert parse_metric_arg("bleu") == {"name": "bleu"}
    assert parse_metric_arg(" rougeL ") == {"name": "rougeL"}
    assert parse_metric_arg("bleu:max_order=2,smooth=true,id=bleu2,w=0.5") == {
        "name": "bleu",
        "max_order": 2,
        "smooth": True,
        "id": "bleu2",
        "w": 0.5,
    }
    assert parse_metric_arg("x:ks=[1, 2],text='a,b',opt={k: 1}") == {
        "name": "x",
        "ks": [1, 2],
        "text": "a,b",
        "opt": {"k": 1},
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "is not a metric name"),
        (":k=1", "is not a metric name"),
        ("two words", "is not a metric name"),
        ("bleu:", "nothing after ':'"),
        ("bleu:max_order", "'max_order' is not key=value"),
        ("bleu:=3", "'=3' is not key=value"),
        ("bleu:max_order=", "'max_order=' is not key=value"),
        ("bleu:a=1,a=2", "'a' is given twice"),
        ("bleu:name=x", "'name' is the metric itself; use id=LABEL"),
        ("bleu:ks=[1", "bad value for 'ks'"),
    ],
)
def test_parse_metric_arg_bad_forms_are_named(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_metric_arg(text)
    message = str(info.value)
    assert message.startswith(f"--metric {text!r}")
    assert needle in message


# -- specs ------------------------------------------------------------------------------
def test_spec_from_dict_string_and_cli_string() -> None:
    spec = as_spec({"name": "bleu", "id": "b2", "max_order": 2})
    assert (spec.name, spec.label, spec.params(), spec.weight) == (
        "bleu",
        "b2",
        {"max_order": 2},
        None,
    )
    assert as_spec("bleu").label == "bleu"
    assert as_spec("bleu:max_order=3").params() == {"max_order": 3}
    assert as_spec(spec) is spec


def test_spec_with_parts_defaults_to_composite() -> None:
    spec = as_spec(
        {
            "id": "quality",
            "aggregation": "min",
            "parts": ["contains", {"name": "scaled", "weight": 2, "factor": 4}],
        }
    )
    assert spec.name == "composite" and spec.label == "quality"
    assert spec.params() == {"aggregation": "min"}
    assert spec.parts is not None
    assert [p.name for p in spec.parts] == ["contains", "scaled"]
    assert [p.weight for p in spec.parts] == [None, 2.0]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"id": "x"}, "metric: name: Field required"),
        ({"name": "a", "weight": -1}, "metric: weight: Input should be greater than or equal to 0"),
        ({"name": "a", "weight": "inf"}, "metric: weight: Input should be a finite number"),
        ({"name": "a", "parts": []}, "metric: parts: List should have at least 1 item"),
        (
            {"parts": [{"name": "a", "weight": 0}, {"name": "b", "weight": 0}]},
            "all weights are zero",
        ),
        (
            {"parts": [{"name": "a", "weight": 1}, {"name": "b"}], "weights": [1, 2]},
            "either 'weights' or a 'weight' on each part",
        ),
        ({"parts": [{"name": "a", "weight": -2}]}, "metric: parts.0.weight: Input should be"),
    ],
)
def test_bad_specs_name_the_key(data: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        as_spec(data)


# -- building -----------------------------------------------------------------------------
@pytest.mark.usefixtures("test_registry")
def test_build_metric_passes_params_and_labels() -> None:
    metric = build_metric({"name": "contains", "id": "contains_ci", "ignore_case": True})
    assert isinstance(metric, Contains) and metric.ignore_case
    assert metric.name == "contains_ci"
    scaled = build_metric("scaled:factor=4")
    assert isinstance(scaled, Scaled) and scaled.factor == 4
    assert scaled.name == "scaled"
    assert scaled.evaluate("abc").value == 0.75


@pytest.mark.usefixtures("test_registry")
@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("nope", "metric 'nope': unknown metric 'nope'; choose one of: composite, contains"),
        (
            "contains:ignore_kase=true",
            "metric 'contains' (contains): unknown parameter 'ignore_kase'",
        ),
        ("scaled:factor=0,id=s0", "metric 's0' (scaled): factor must be > 0, got 0.0"),
        (
            "scaled:factor=abc",
            "metric 'scaled' (scaled): factor: Input should be a valid number",
        ),
        (
            "contains:ignore_kase=true",
            "unknown parameter 'ignore_kase'; accepted: ignore_case",
        ),
        ("graded:grade=1,llm_model=x", "unknown parameter 'llm_model'; accepted: grade"),
        ("contains:llm=x", "'llm' is not a metric parameter"),
        ({"name": "contains", "parts": ["scaled"]}, "'parts' only applies to composite metrics"),
        ("not_a_metric", "'not_a_metric': its factory made a NotAMetric, not a Contains"),
        (
            {"name": "composite", "parts": ["contains"], "aggregation": "median"},
            "metric 'composite' (composite): composite: unknown aggregation 'median'",
        ),
    ],
)
def test_build_errors_name_metric_and_key(spec: str | dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_metric(spec)
    assert needle in str(info.value)


@pytest.mark.usefixtures("test_registry")
def test_nested_composites_with_weights() -> None:
    metric = build_metric(
        {
            "id": "quality",
            "parts": [
                {"name": "contains", "weight": 3},
                {
                    "id": "inner",
                    "weight": 1,
                    "aggregation": "max",
                    "parts": [
                        {"name": "scaled", "factor": 10},
                        {"name": "contains", "id": "ci", "ignore_case": True},
                    ],
                },
            ],
        }
    )
    assert isinstance(metric, Composite) and metric.name == "quality"
    assert metric.part_names == ("contains", "inner")
    assert metric.weights == (0.75, 0.25)
    inner = metric.parts[1]
    assert isinstance(inner, Composite) and inner.aggregation == "max"
    assert inner.part_names == ("scaled", "ci")
    # "The Cat" vs "cat": contains 0; inner = max(7/10, 1) = 1 → 0.75·0 + 0.25·1
    out = metric.detailed_evaluate("The Cat", "cat")
    assert out == {
        "contains": 0.0,
        "inner": 1.0,
        "inner.scaled": pytest.approx(0.7),
        "inner.ci": 1.0,
        "composite": pytest.approx(0.25),
    }


@pytest.mark.usefixtures("test_registry")
def test_parts_without_weights_are_equal_and_explicit_weights_pass_through() -> None:
    equal = build_metric({"parts": ["contains", "scaled"]})
    assert isinstance(equal, Composite) and equal.weights == (0.5, 0.5)
    listed = build_metric({"parts": ["contains", "scaled"], "weights": [1, 3]})
    assert isinstance(listed, Composite) and listed.weights == (0.25, 0.75)
    partly = build_metric({"parts": ["contains", {"name": "scaled", "weight": 3}]})
    assert isinstance(partly, Composite) and partly.weights == (0.25, 0.75)


@pytest.mark.usefixtures("test_registry")
def test_llm_is_injected_lazily_and_once() -> None:
    provider = CountingProvider()
    text_only = build_metrics(["contains", "scaled"], provider)
    assert [m.name for m in text_only] == ["contains", "scaled"]
    assert provider.calls == 0
    metrics = build_metrics(
        [
            "contains",
            {"id": "q", "parts": ["contains", {"name": "graded", "id": "g2", "grade": 1}]},
            "graded",
        ],
        provider,
    )
    assert provider.calls == 1
    judge = metrics[2]
    assert isinstance(judge, Graded) and judge.llm is provider.llm
    nested = metrics[1]
    assert isinstance(nested, Composite)
    assert isinstance(nested.parts[1], Graded) and nested.parts[1].llm is provider.llm
    assert nested.evaluate("cat", "cat").value == 1.0


@pytest.mark.usefixtures("test_registry")
def test_llm_metric_without_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="metric 'judge' needs an LLM"):
        build_metrics(["contains", "graded:id=judge"])
    with pytest.raises(ConfigError, match="metric 'graded' needs an LLM"):
        build_metric({"parts": ["contains", "graded"]})


def test_only_metric_classes_can_be_registered() -> None:
    with pytest.raises(TypeError, match="is not a subclass of MetricBase"):
        registry.METRICS.register("x")(NotAMetric)
    with pytest.raises(TypeError, match="registered with returns="):
        registry.METRICS.register("x")(not_a_metric)
    assert "x" not in registry.METRICS


@pytest.mark.usefixtures("test_registry")
def test_needs_llm() -> None:
    assert not needs_llm(["contains", "scaled:factor=2"])
    assert needs_llm(["contains", "graded"])
    assert needs_llm([{"parts": ["contains", {"parts": ["scaled", "graded"]}]}])
    with pytest.raises(ConfigError, match="unknown metric 'nope'"):
        needs_llm(["nope"])


@pytest.mark.usefixtures("test_registry")
def test_duplicate_labels_are_rejected() -> None:
    with pytest.raises(
        ConfigError, match="metric labels must be unique; give an 'id' to: contains"
    ):
        build_metrics(["contains", "contains:ignore_case=true"])
    built = build_metrics(["contains", "contains:ignore_case=true,id=contains_ci"])
    assert [m.name for m in built] == ["contains", "contains_ci"]


def test_default_text_metrics() -> None:
    assert DEFAULT_TEXT_METRICS == ["exact_match", "token_f1", "bleu", "rouge1", "rouge2", "rougeL"]


# -- files ----------------------------------------------------------------------------------
SHORT_YAML = """\
answer_metrics:
  - exact_match
  - {name: bleu, id: bleu2, max_order: 2}
  - id: quality
    parts:
      - {name: exact_match, weight: 0.3}
      - {name: llm_judge, weight: 0.7}
llm: {model: judge-model, timeout_s: 5}
"""


def test_load_short_yaml(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(SHORT_YAML)
    specs, llm = load_metric_specs(path)
    assert [s.label for s in specs] == ["exact_match", "bleu2", "quality"]
    assert specs[2].parts is not None and [p.weight for p in specs[2].parts] == [0.3, 0.7]
    assert llm is not None and (llm.model, llm.timeout_s) == ("judge-model", 5.0)


def test_load_short_toml_without_llm(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text('[[answer_metrics]]\nname = "token_f1"\n[[answer_metrics]]\nname = "rouge1"\n')
    specs, llm = load_metric_specs(path)
    assert [s.name for s in specs] == ["token_f1", "rouge1"] and llm is None


def test_load_full_benchmark_config(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(
        "name: t\ndatasets: [{name: a, questions: q.jsonl, snapshot: r}]\n"
        "retrievers: [{name: bm25}]\nanswer_metrics: [exact_match, 'bleu:max_order=2']\n"
    )
    specs, llm = load_metric_specs(path)
    assert [(s.name, s.params()) for s in specs] == [
        ("exact_match", {}),
        ("bleu", {"max_order": 2}),
    ]
    assert llm is None
    path.write_text(path.read_text() + "llm: {model: m}\n")
    assert load_metric_specs(path)[1] is not None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "answer_metrics: [a, {parts: [{name: b, weight: 1}, {name: c, weight: -1}]}]\n",
            "answer_metrics.1.parts.1.weight: Input should be greater than or equal to 0",
        ),
        ("answer_metrics: [a, a]\n", "metric labels must be unique; give an 'id' to: a"),
        ("answer_metrics: [a]\nllm: {timeout_s: 0}\n", "llm.timeout_s: Input should be greater"),
        ("answer_metrics: ['a:b']\n", "answer_metrics.0: Value error, --metric 'a:b'"),
        ("- a\n", "expected a mapping"),
        ("answer_metrics: [a\n", "not valid YAML"),
        ("answer_metrics: [a]\nbogus: 1\n", "name: Field required"),  # full-config path
    ],
)
def test_load_errors_name_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_metric_specs(path)
    assert str(info.value).startswith(str(path))
    assert needle in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="metrics file not found"):
        load_metric_specs(tmp_path / "nope.yaml")


# -- the real registered metrics (other modules of the library) ------------------------------


def test_real_metrics_read_their_params_before_building() -> None:
    bleu_options = "max_ngram_order, smoothing, smooth_value, effective_order, tokenize, lowercase"
    with pytest.raises(ConfigError) as info:
        build_metric("bleu:max_order=2")
    assert str(info.value) == (
        f"metric 'bleu' (bleu): unknown parameter 'max_order'; accepted: {bleu_options}"
    )
    with pytest.raises(ConfigError, match=r"metric 'em' \(exact_match\): ignore_case: Input"):
        build_metric("exact_match:ignore_case=maybe,id=em")
    with pytest.raises(ConfigError, match=r"metric 'bleu' \(bleu\): 'parts' only applies"):
        build_metric({"name": "bleu", "parts": ["exact_match"]})
    with pytest.raises(ConfigError, match=r"metric 'c' \(composite\): composite: no parts"):
        build_metric({"name": "composite", "id": "c"})
    built = build_metric("rouge1:measure=recall,id=r1")
    assert isinstance(built, Rouge1) and (built.name, built.measure) == ("r1", "recall")
    with pytest.raises(ConfigError, match="rouge_type: Input should be 'rouge1'"):
        build_metric("rouge1:rouge_type=rouge2")


def test_real_registered_names_build_and_score() -> None:
    provider = CountingProvider()
    specs: list[Any] = [*DEFAULT_TEXT_METRICS, "rougeLsum", "exact_match:ignore_case=true,id=em_ci"]
    metrics = build_metrics(specs, provider)
    assert [m.name for m in metrics] == [*DEFAULT_TEXT_METRICS, "rougeLsum", "em_ci"]
    assert provider.calls == 0
    assert not needs_llm(specs) and needs_llm(["llm_judge"])
    sample = Sample("the cat sat on the mat", ("the cat sat on the mat",))
    for metric in metrics:
        assert metric.score_samples([sample])[0].value == pytest.approx(1.0), metric.name
    quality = build_metric(
        {
            "id": "quality",
            "parts": [
                {"name": "exact_match", "weight": 0.3, "ignore_case": True},
                {"name": "token_f1", "weight": 0.3, "ignore_case": False},
                {"name": "llm_judge", "weight": 0.4, "id": "judge"},
            ],
        },
        provider,
    )
    assert provider.calls == 1
    assert isinstance(quality, Composite) and quality.part_names == (
        "exact_match",
        "token_f1",
        "judge",
    )
    # the scripted judge answers "5" → 5/5; token F1 with ignore_case=False:
    # {The, cat} vs {the, cat} → P = R = 1/2 → 0.5; composite 0.3·1 + 0.3·0.5 + 0.4·1
    out = quality.detailed_evaluate("The cat", "the cat", question="who?")
    assert {k: out[k] for k in ("exact_match", "token_f1", "judge", "composite")} == {
        "exact_match": 1.0,
        "token_f1": pytest.approx(0.5),
        "judge": 1.0,
        "composite": pytest.approx(0.85),
    }
    assert registry.get("metrics", "composite") is Composite

"""Answer metrics from names and config (docs/configuration.md#answer_metrics) and from
the ``rbench eval`` command line (docs/architecture.md#interfaces).

A metric is named the way every pluggable stage is: a registry name, an
optional ``id`` (the label results are stored under; default = name) and any
further keys, read as the metric class's ``Params`` (an unknown key or a
mistyped value is a one-line error naming the metric and the key)::

    answer_metrics:
      - exact_match
      - {name: token_f1}
      - {name: bleu, id: bleu2, max_ngram_order: 2}
      - id: quality                       # name defaults to composite with parts
        aggregation: weighted_mean
        parts:
          - {name: exact_match, ignore_case: true, weight: 0.3}
          - {name: token_f1, weight: 0.3}
          - {name: llm_judge, weight: 0.4}

On the command line the same is ``NAME`` or ``NAME:key=value,key=value``
(values read as YAML, so ``0.5``, ``true`` and ``[1, 2]`` are numbers, bools
and lists): ``--metric bleu:max_ngram_order=2,id=bleu2``.

A metric whose class declares ``needs_llm`` (an LLM judge) gets
``llm=llm_provider()`` (as a :class:`~retrieval_bench.contracts.params.StageServices`);
the provider is called at most once (through
:class:`~retrieval_bench.llm.lazy.LazyLLM`), and only when such a metric is
built, so text-only evaluations never start a model server (as for stages, see
docs/extending.md). ``parts`` are built first and handed to the composite
class (a :class:`~retrieval_bench.metrics.answer.composite.Composite`) as its
``parts`` keyword; a part's ``weight`` becomes the enclosing composite's weight for it.

The spec type, :class:`~retrieval_bench.specs.MetricSpec`, and the CLI form's
parser live in :mod:`retrieval_bench.specs`, below both this module and
:mod:`retrieval_bench.config`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Union

from pydantic import ValidationError

from retrieval_bench.contracts.answer_metric import MetricBase
from retrieval_bench.contracts.params import NO_SERVICES, StageParams, StageServices
from retrieval_bench.contracts.registry import METRICS
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.metrics.answer.composite import Composite
from retrieval_bench.specs import (
    MetricSpec,
    duplicate_labels,
    format_validation_error,
    parse_metric_arg,
)

if TYPE_CHECKING:
    from retrieval_bench.llm.base import LLM

LLMProvider = Callable[[], "LLM"]
DEFAULT_TEXT_METRICS = ["exact_match", "token_f1", "bleu", "rouge1", "rouge2", "rougeL"]
"""What ``rbench eval`` scores when no metric is named."""

SpecLike = Union[MetricSpec, Mapping[str, Any], str]  # noqa: UP007 - runtime alias


# -- specs from anything ----------------------------------------------------------------
def as_spec(spec: SpecLike) -> MetricSpec:
    """A :class:`MetricSpec` from a spec, a mapping, or a CLI string."""
    if isinstance(spec, MetricSpec):
        return spec
    data = parse_metric_arg(spec) if isinstance(spec, str) else spec
    try:
        return MetricSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error("metric", exc)) from None


def _type(spec: MetricSpec) -> type[MetricBase]:
    """The class ``spec.name`` builds; an unknown name raises, naming the label."""
    try:
        return METRICS.type_of(spec.name)
    except ConfigError as exc:
        raise ConfigError(f"metric {spec.label!r}: {exc}") from None


def _needs_llm(spec: MetricSpec) -> bool:
    """Whether the metric's class declares ``needs_llm`` (its parts are not asked)."""
    return _type(spec).needs_llm


def needs_llm(specs: Iterable[SpecLike]) -> bool:
    """Whether building ``specs`` would need an LLM (any metric or part declares it)."""
    for s in map(as_spec, specs):
        if _needs_llm(s) or (s.parts is not None and needs_llm(s.parts)):
            return True
    return False


# -- building -------------------------------------------------------------------------
def _client(spec: MetricSpec, llm: LazyLLM) -> LLM:
    """The client for a metric that declares ``needs_llm`` (made on the first one)."""
    if not llm.available:
        raise ConfigError(
            f"metric {spec.label!r} needs an LLM ({spec.name} judges with a model); "
            "configure an llm: section (or pass llm_provider) or drop the metric"
        )
    return llm.client()


def _check_params(spec: MetricSpec, params: Mapping[str, Any], takes_parts: bool) -> StageParams:
    """``params`` read as the metric's ``Params``; errors name the label and the key."""
    if "llm" in spec.params():
        raise ConfigError(
            f"metric {spec.label!r}: 'llm' is not a metric parameter; configure the llm: section"
        )
    accepted = METRICS.params_of(spec.name)
    for key in params:
        if key not in accepted.model_fields:
            options = ", ".join(accepted.model_fields) or "none"
            raise ConfigError(
                f"metric {spec.label!r} ({spec.name}): unknown parameter {key!r}; "
                f"accepted: {options}"
            )
    if spec.parts is not None and not takes_parts:
        raise ConfigError(
            f"metric {spec.label!r} ({spec.name}): 'parts' only applies to composite metrics"
        )
    try:
        return accepted.of(params)
    except ConfigError as exc:
        raise ConfigError(f"metric {spec.label!r} ({spec.name}): {exc}") from None


def _build(spec: MetricSpec, llm: LazyLLM) -> MetricBase:
    made = _type(spec)
    params = spec.params()
    parts: list[MetricBase] | None = None
    if spec.parts is not None:
        parts = [_build(p, llm) for p in spec.parts]
        if any(p.weight is not None for p in spec.parts):
            params["weights"] = [1.0 if p.weight is None else p.weight for p in spec.parts]
    typed = _check_params(spec, params, issubclass(made, Composite))
    services = StageServices(llm=_client(spec, llm)) if made.needs_llm else NO_SERVICES
    try:
        if parts is not None and issubclass(made, Composite):
            metric: MetricBase = made(made.Params.of(typed), parts=parts)
        else:
            metric = METRICS.create(spec.name, typed, services)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"metric {spec.label!r} ({spec.name}): {exc}") from None
    metric.name = spec.label
    return metric


def build_metric(spec: SpecLike, llm_provider: LLMProvider | None = None) -> MetricBase:
    """Build one metric (composites recursively); its ``.name`` is the spec's label."""
    return _build(as_spec(spec), LazyLLM.of(llm_provider))


def build_metrics(
    specs: Iterable[SpecLike], llm_provider: LLMProvider | None = None
) -> list[MetricBase]:
    """Build every metric, sharing one lazily created LLM; labels must be unique."""
    resolved = [as_spec(s) for s in specs]
    dupes = duplicate_labels(resolved)
    if dupes:
        raise ConfigError(
            f"metric labels must be unique; give an 'id' to: {', '.join(dupes)} "
            "(e.g. bleu:max_ngram_order=2,id=bleu2)"
        )
    llm = LazyLLM.of(llm_provider)
    return [_build(s, llm) for s in resolved]

"""Answer metrics from names and config (docs/configuration.md#answer_metrics) and from
the ``rbench eval`` command line (docs/architecture.md#interfaces).

A metric is named the way every pluggable stage is: a registry name, an
optional ``id`` (the label results are stored under; default = name) and any
further keys, passed to the metric's factory as keyword parameters::

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
``llm=llm_provider()``; the provider is called at most once (through
:class:`~retrieval_bench.llm.lazy.LazyLLM`), and only when such a metric is
built, so text-only evaluations never start a model server (as for stages, see
docs/extending.md). A part's ``weight`` becomes the enclosing composite's
weight for it.

The spec type, :class:`~retrieval_bench.specs.MetricSpec`, and the CLI form's
parser live in :mod:`retrieval_bench.specs`, below both this module and
:mod:`retrieval_bench.config`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Union

from pydantic import ValidationError

from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.metrics.answer.base import MetricBase
from retrieval_bench.registry import METRICS
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


def _factory(spec: MetricSpec) -> Callable[..., MetricBase]:
    try:
        return METRICS.get(spec.name)
    except ConfigError as exc:
        raise ConfigError(f"metric {spec.label!r}: {exc}") from None


def _needs_llm(spec: MetricSpec) -> bool:
    """Whether the metric's class declares ``needs_llm`` (its parts are not asked)."""
    _factory(spec)  # an unknown name raises, naming the label
    return METRICS.type_of(spec.name).needs_llm


def _parameters(factory: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}


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


def _check_params(spec: MetricSpec, factory: Callable[..., Any], params: Mapping[str, Any]) -> None:
    if "llm" in spec.params():
        raise ConfigError(
            f"metric {spec.label!r}: 'llm' is not a metric parameter; configure the llm: section"
        )
    accepted = _parameters(factory)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return
    for key in params:
        if key in ("llm", "parts"):
            continue
        if key not in accepted:
            options = ", ".join(k for k in accepted if k not in ("llm", "parts", "name")) or "none"
            raise ConfigError(
                f"metric {spec.label!r} ({spec.name}): unknown parameter {key!r}; "
                f"accepted: {options}"
            )
    if "parts" in params and "parts" not in accepted:
        raise ConfigError(
            f"metric {spec.label!r} ({spec.name}): 'parts' only applies to composite metrics"
        )


def _build(spec: MetricSpec, llm: LazyLLM) -> MetricBase:
    factory = _factory(spec)
    params = spec.params()
    if spec.parts is not None:
        params["parts"] = [_build(p, llm) for p in spec.parts]
        if any(p.weight is not None for p in spec.parts):
            params["weights"] = [1.0 if p.weight is None else p.weight for p in spec.parts]
    _check_params(spec, factory, params)
    if "name" in _parameters(factory):
        params["name"] = spec.label
    if _needs_llm(spec):
        params["llm"] = _client(spec, llm)
    try:
        metric = METRICS.create(spec.name, **params)
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

"""Answer metrics from names and config (SPEC §3.4 "in config", §6 CLI ``rbench eval``).

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

A metric whose factory has an ``llm`` parameter (an LLM judge) gets
``llm=llm_provider()``; the provider is called at most once, and only when
such a metric is built, so text-only evaluations never start a model server
(the convention of ``retrieval_bench.harness.stages``). A part's ``weight``
becomes the enclosing composite's weight for it.

This module must not import :mod:`retrieval_bench.config` at import time:
the config imports :class:`MetricSpec` from here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from retrieval_bench import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.base import MetricBase

if TYPE_CHECKING:
    from retrieval_bench.config import LLMSpec
    from retrieval_bench.llm.base import LLM

LLMProvider = Callable[[], "LLM"]
DEFAULT_TEXT_METRICS = ["exact_match", "token_f1", "bleu", "rouge1", "rouge2", "rougeL"]
"""What ``rbench eval`` scores when no metric is named."""

_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
_SHORT_FORM_KEYS = {"answer_metrics", "llm"}


class MetricSpec(BaseModel):
    """One answer metric: a registry name, a label, parameters, maybe weighted parts."""

    model_config = ConfigDict(extra="allow")
    name: str
    """The registry name (``composite`` when omitted and ``parts`` is given)."""
    id: str | None = Field(default=None, min_length=1)
    """The label scores are stored under (default: ``name``)."""
    weight: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """This metric's weight inside the enclosing composite (default 1)."""
    parts: list[MetricSpec] | None = Field(default=None, min_length=1)
    """Sub-metrics of a composite."""

    @model_validator(mode="before")
    @classmethod
    def _composite_by_default(cls, data: Any) -> Any:
        if isinstance(data, str):
            try:
                return parse_metric_arg(data)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        if isinstance(data, Mapping) and "parts" in data and "name" not in data:
            return {**data, "name": "composite"}
        return data

    @model_validator(mode="after")
    def _part_weights(self) -> MetricSpec:
        if self.parts is None:
            return self
        if any(p.weight is not None for p in self.parts):
            if "weights" in self.params():
                raise ValueError("give either 'weights' or a 'weight' on each part, not both")
            if all((p.weight if p.weight is not None else 1.0) == 0 for p in self.parts):
                raise ValueError("parts: all weights are zero; give one part a weight > 0")
        return self

    @property
    def label(self) -> str:
        return self.id or self.name

    def params(self) -> dict[str, Any]:
        """The factory's keyword parameters (every key not declared above)."""
        return dict(self.model_extra or {})


_SPEC_LIST: TypeAdapter[list[MetricSpec]] = TypeAdapter(list[MetricSpec])
SpecLike = Union[MetricSpec, Mapping[str, Any], str]  # noqa: UP007 - runtime alias


def duplicate_labels(specs: Iterable[MetricSpec]) -> list[str]:
    """Labels used more than once (sorted)."""
    labels = [s.label for s in specs]
    return sorted({x for x in labels if labels.count(x) > 1})


# -- the CLI form -----------------------------------------------------------------
def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets, braces or quotes."""
    items: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def parse_metric_arg(text: str) -> dict[str, Any]:
    """``NAME`` or ``NAME:key=value,key=value`` -> ``{"name": NAME, key: value, ...}``."""
    usage = "write NAME or NAME:key=value,key=value (e.g. bleu:max_ngram_order=2,id=bleu2)"
    name, sep, rest = text.strip().partition(":")
    name = name.strip()
    if not _NAME.match(name):
        raise ConfigError(f"--metric {text!r}: {name!r} is not a metric name; {usage}")
    spec: dict[str, Any] = {"name": name}
    if not sep:
        return spec
    if not rest.strip():
        raise ConfigError(f"--metric {text!r}: nothing after ':'; {usage}")
    for item in _split_top_level(rest):
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not _NAME.match(key) or not raw.strip():
            raise ConfigError(f"--metric {text!r}: {item.strip()!r} is not key=value; {usage}")
        if key in spec:
            what = "is the metric itself; use id=LABEL" if key == "name" else "is given twice"
            raise ConfigError(f"--metric {text!r}: {key!r} {what}")
        try:
            spec[key] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"--metric {text!r}: bad value for {key!r}: {first}") from None
    return spec


# -- specs from anything ----------------------------------------------------------------
def _validation_message(where: str, exc: ValidationError, prefix: Sequence[str | int] = ()) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in (*prefix, *first["loc"])) or "(top level)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {loc}: {first['msg']}{more}"


def as_spec(spec: SpecLike) -> MetricSpec:
    """A :class:`MetricSpec` from a spec, a mapping, or a CLI string."""
    if isinstance(spec, MetricSpec):
        return spec
    data = parse_metric_arg(spec) if isinstance(spec, str) else spec
    try:
        return MetricSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message("metric", exc)) from None


def _factory(spec: MetricSpec) -> Callable[..., Any]:
    try:
        return registry.get("metrics", spec.name)
    except ConfigError as exc:
        raise ConfigError(f"metric {spec.label!r}: {exc}") from None


def _parameters(factory: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}


def _takes_llm(factory: Callable[..., Any]) -> bool:
    return "llm" in _parameters(factory)


def needs_llm(specs: Iterable[SpecLike]) -> bool:
    """Whether building ``specs`` would need an LLM (any metric or part takes one)."""
    for s in map(as_spec, specs):
        if _takes_llm(_factory(s)) or (s.parts is not None and needs_llm(s.parts)):
            return True
    return False


# -- building -------------------------------------------------------------------------
class _LazyLLM:
    """Calls the provider once, on the first metric that needs a model."""

    def __init__(self, provider: LLMProvider | None) -> None:
        self.provider = provider
        self._llm: LLM | None = None

    def get(self, spec: MetricSpec) -> LLM:
        if self.provider is None:
            raise ConfigError(
                f"metric {spec.label!r} needs an LLM ({spec.name} judges with a model); "
                "configure an llm: section (or pass llm_provider) or drop the metric"
            )
        if self._llm is None:
            self._llm = self.provider()
        return self._llm


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


def _build(spec: MetricSpec, llm: _LazyLLM) -> MetricBase:
    factory = _factory(spec)
    params = spec.params()
    if spec.parts is not None:
        params["parts"] = [_build(p, llm) for p in spec.parts]
        if any(p.weight is not None for p in spec.parts):
            params["weights"] = [1.0 if p.weight is None else p.weight for p in spec.parts]
    _check_params(spec, factory, params)
    if "name" in _parameters(factory):
        params["name"] = spec.label
    if _takes_llm(factory):
        params["llm"] = llm.get(spec)
    try:
        metric = registry.create("metrics", spec.name, **params)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"metric {spec.label!r} ({spec.name}): {exc}") from None
    if not isinstance(metric, MetricBase):
        raise ConfigError(
            f"metric {spec.label!r}: {spec.name} made a {type(metric).__name__}, "
            "not a MetricBase subclass"
        )
    metric.name = spec.label
    return metric


def build_metric(spec: SpecLike, llm_provider: LLMProvider | None = None) -> MetricBase:
    """Build one metric (composites recursively); its ``.name`` is the spec's label."""
    return _build(as_spec(spec), _LazyLLM(llm_provider))


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
    llm = _LazyLLM(llm_provider)
    return [_build(s, llm) for s in resolved]


# -- files -------------------------------------------------------------------------------
def load_metric_specs(path: Path | str) -> tuple[list[MetricSpec], LLMSpec | None]:
    """The ``answer_metrics`` (and ``llm``) of a YAML/TOML file.

    The file is either a full benchmark config (validated as one) or just
    ``{answer_metrics: [...], llm: {...}}``. The LLM spec is None when the
    file has no ``llm:`` section; the metric list may be empty.
    """
    from retrieval_bench.config import LLMSpec, parse_config, read_mapping

    path = Path(path)
    data = read_mapping(path, "metrics file", "file", "with an answer_metrics: list")
    if not set(data) <= _SHORT_FORM_KEYS:
        cfg = parse_config(data, str(path))
        return list(cfg.answer_metrics), (cfg.llm if "llm" in data else None)
    try:
        specs = _SPEC_LIST.validate_python(data.get("answer_metrics") or [])
    except ValidationError as exc:
        raise ConfigError(_validation_message(str(path), exc, ("answer_metrics",))) from None
    dupes = duplicate_labels(specs)
    if dupes:
        raise ConfigError(
            f"{path}: answer_metrics: metric labels must be unique; "
            f"give an 'id' to: {', '.join(dupes)}"
        )
    llm_spec = None
    if data.get("llm") is not None:
        try:
            llm_spec = LLMSpec.model_validate(data["llm"])
        except ValidationError as exc:
            raise ConfigError(_validation_message(str(path), exc, ("llm",))) from None
    return specs, llm_spec

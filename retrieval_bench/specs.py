"""The spec types of a config: a pluggable stage or an answer metric, named.

Both are a registry name, an optional ``id`` (the label results are stored
under; default = the name) and any further keys, passed to the factory as
keyword parameters (see docs/configuration.md). :class:`MetricSpec` adds a
composite's ``weight`` and ``parts`` and reads the CLI short form
``NAME:key=value,...``.

This module sits below :mod:`retrieval_bench.config` and
:mod:`retrieval_bench.metrics.answer.factory`, which both use it: it imports nothing
of the toolkit but :mod:`retrieval_bench.errors`, :mod:`retrieval_bench.identifiers`
(a stage label names files, so it is an identifier) and
:mod:`retrieval_bench.config_files` (YAML that refuses a key given twice), which
import nothing else of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from retrieval_bench.config_files import load_yaml
from retrieval_bench.errors import ConfigError
from retrieval_bench.identifiers import check_identifier

_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")


def format_validation_error(
    source: str | None, exc: ValidationError, prefix: Sequence[str | int] = ()
) -> str:
    """One line for a pydantic error: ``SOURCE: a.1.b: message (+N more)`` (no
    ``SOURCE: `` when it is None); ``prefix`` is prepended to the location (the key
    the validated value sits under)."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in (*prefix, *first["loc"])) or "(top level)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{'' if source is None else source + ': '}{loc}: {first['msg']}{more}"


class NamedSpec(BaseModel):
    """A registry name, an optional label, and free keyword parameters."""

    model_config = ConfigDict(extra="allow")
    name: str
    """The registry name."""
    id: str | None = None
    """The label results are stored under (default: ``name``)."""

    @property
    def label(self) -> str:
        return self.id or self.name

    def params(self) -> dict[str, Any]:
        """The factory's keyword parameters (every key not declared on the spec)."""
        return dict(self.model_extra or {})


def duplicate_labels(specs: Iterable[NamedSpec]) -> list[str]:
    """Labels used more than once (sorted)."""
    labels = [s.label for s in specs]
    return sorted({x for x in labels if labels.count(x) > 1})


class StageSpec(NamedSpec):
    """One pluggable stage: a registry name plus its parameters. Its label names the
    files its results are stored in, so it is an identifier
    (:mod:`retrieval_bench.identifiers`)."""

    @model_validator(mode="after")
    def _label_is_identifier(self) -> StageSpec:
        what = "id" if self.id is not None else "stage label (its name; give an 'id')"
        check_identifier(self.label, what)
        return self


class MetricSpec(NamedSpec):
    """One answer metric: a registry name (``composite`` when omitted and ``parts``
    is given), a label, parameters, maybe weighted parts."""

    id: str | None = Field(default=None, min_length=1)
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
    """``NAME`` or ``NAME:key=value,key=value`` -> ``{"name": NAME, key: value, ...}``
    (values read as YAML, so ``0.5``, ``true`` and ``[1, 2]`` are numbers, bools, lists)."""
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
            spec[key] = load_yaml(raw)  # a key given twice in a value is refused
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"--metric {text!r}: bad value for {key!r}: {first}") from None
    return spec

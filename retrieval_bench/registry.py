"""Name → factory registries for every pluggable stage (SPEC §1.3 "plugins").

Adding a strategy is one new module plus one ``@register`` line; no if/elif
dispatch anywhere. Third-party packages can add entries through the
``retrieval_bench.<kind>`` entry-point groups (e.g. ``retrieval_bench.retrievers``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from retrieval_bench.errors import ConfigError

Factory = Callable[..., Any]

KINDS = ("chunkers", "retrievers", "fusions", "rerankers", "metrics")
_REGISTRIES: dict[str, dict[str, Factory]] = {k: {} for k in KINDS}
# Built-in modules imported lazily, so `import retrieval_bench` stays cheap.
_BUILTIN_MODULES: dict[str, tuple[str, ...]] = {
    "chunkers": (
        "retrieval_bench.chunking.truncate",
        "retrieval_bench.chunking.window",
        "retrieval_bench.chunking.ast",
    ),
    "retrievers": (
        "retrieval_bench.retrieval.dense",
        "retrieval_bench.retrieval.bm25",
        "retrieval_bench.retrieval.exact",
        "retrieval_bench.retrieval.fuzzy",
        "retrieval_bench.retrieval.hyde",
        "retrieval_bench.retrieval.adapter",
    ),
    "fusions": (
        "retrieval_bench.fusion.concat",
        "retrieval_bench.fusion.normsum",
        "retrieval_bench.fusion.rrf",
        "retrieval_bench.fusion.vote",
        "retrieval_bench.fusion.learned",
        "retrieval_bench.fusion.optimize",
    ),
    "rerankers": (
        "retrieval_bench.reranking.llm",
        "retrieval_bench.reranking.cross_encoder",
    ),
    "metrics": (
        "retrieval_bench.metrics.text.exact_match",
        "retrieval_bench.metrics.text.token_f1",
        "retrieval_bench.metrics.text.bleu",
        "retrieval_bench.metrics.text.rouge",
        "retrieval_bench.metrics.judge",
        "retrieval_bench.metrics.composite",
        "retrieval_bench.metrics.grounded",
        "retrieval_bench.metrics.code_similarity",
        "retrieval_bench.metrics.factuality.claims_fc",
        "retrieval_bench.metrics.factuality.rubrics_fc",
        "retrieval_bench.metrics.factuality.faithfulness",
        "retrieval_bench.metrics.factuality.context_relevancy",
    ),
}
_loaded: set[str] = set()


def register(kind: str, name: str) -> Callable[[Factory], Factory]:
    """Class/function decorator adding a factory under ``kind``/``name``."""
    if kind not in _REGISTRIES:
        raise ValueError(f"unknown registry kind {kind!r}; expected one of {KINDS}")

    def deco(factory: Factory) -> Factory:
        _REGISTRIES[kind][name] = factory
        return factory

    return deco


def _load(kind: str) -> None:
    if kind in _loaded:
        return
    _loaded.add(kind)
    for mod in _BUILTIN_MODULES[kind]:
        importlib.import_module(mod)
    for ep in entry_points(group=f"retrieval_bench.{kind}"):
        _REGISTRIES[kind].setdefault(ep.name, ep.load())


def names(kind: str) -> list[str]:
    _load(kind)
    return sorted(_REGISTRIES[kind])


def get(kind: str, name: str) -> Factory:
    _load(kind)
    try:
        return _REGISTRIES[kind][name]
    except KeyError:
        raise ConfigError(
            f"unknown {kind[:-1]} {name!r}; choose one of: {', '.join(names(kind))}"
        ) from None


def create(kind: str, name: str, /, **params: Any) -> Any:
    """Instantiate ``name`` with keyword params (which may include ``name``, the
    stage's own label); a bad param names itself."""
    factory = get(kind, name)
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"{kind[:-1]} {name!r}: bad parameters: {exc}") from exc

"""Checking a benchmark config's stages before any work is done.

Pydantic validates the config's own keys; a stage entry's further keys are
the stage factory's keyword parameters, which only the registry knows. They
are checked here, against the factory's signature, before a snapshot is
opened or a file chunked: a typo such as ``{name: rrf, krrf: 60}`` must stop
the run with a message naming the parameter and the valid ones, not surface
later as a stage that "failed" on every query and scored 0.

Values are checked against the factory's type annotations with pydantic, as
the config's own keys are. A stage whose constructor takes ``llm`` must
declare ``needs_llm`` (and the reverse): the harness passes the client by the
flag alone (see docs/extending.md). The chunker is also instantiated (cheap,
and its value checks, such as a negative ``budget``, then fail here too).
Retrievers, fusions and rerankers are not instantiated: some load models when
built; a stage checks its values and its inputs' roles itself
(:mod:`~retrieval_bench.harness.run.roles`). The files a stage reads are checked
against the run's question ids by
:func:`check_stage_inputs` (:meth:`~retrieval_bench.stage.Stage.check_inputs`),
once per run or sweep, after the datasets are read.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ConfigDict, ValidationError, create_model

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.harness.run.groups import NAMESPACE_SEP, colliding_ids
from retrieval_bench.harness.run.prepare import select_questions
from retrieval_bench.harness.run.roles import check_roles, config_entries
from retrieval_bench.registry import CHUNKERS, Registry
from retrieval_bench.specs import StageSpec, format_validation_error
from retrieval_bench.stage import Stage

INJECTED = frozenset({"llm", "name"})
"""Parameters the harness passes itself (the shared LLM client, the stage label)."""
STAGE_KEYS: dict[str, frozenset[str]] = {
    "chunkers": frozenset(),
    "retrievers": frozenset({"cutoff"}),
    "fusions": frozenset({"inputs", "level", "cutoff"}),
    "rerankers": frozenset({"inputs", "input", "cutoff"}),
}
"""Keys a stage entry may carry besides the factory's parameters: the stages it
reads (``inputs``; a reranker's older ``input``), a ``cutoff`` and a fusion's ``level``
(:mod:`retrieval_bench.stage_graph`). ``name`` and ``id`` are the entry's own fields."""


def _inits(factory: object) -> list[object]:
    """The callables whose keyword parameters ``factory`` accepts: a class's
    ``__init__`` and, while one passes ``**kwargs`` on, its bases' ``__init__``."""
    if not inspect.isclass(factory):
        return [factory]
    chain: list[object] = []
    for klass in factory.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        chain.append(init)
        if not _named(init)[1]:
            break
    return chain


def _annotations(func: object) -> dict[str, Any]:
    """Resolved parameter annotations of ``func``; unresolvable ones are left out
    (their values are then not type-checked)."""
    try:
        return dict(typing.get_type_hints(func))
    except Exception:  # noqa: BLE001 - a forward reference that cannot be resolved
        pass
    hints: dict[str, Any] = {}
    globalns = getattr(func, "__globals__", {})
    for name, raw in getattr(func, "__annotations__", {}).items():
        try:
            hints[name] = eval(raw, globalns) if isinstance(raw, str) else raw  # noqa: S307
        except Exception:  # noqa: BLE001
            continue
    return hints


def check_param_types(stages: Registry[Any], spec: StageSpec, where: str) -> None:
    """ConfigError naming the first parameter whose value does not fit the type
    the factory declares (``retrievers.1.k1: Input should be a valid number``)."""
    hints: dict[str, Any] = {}
    for init in reversed(_inits(stages.get(spec.name))):
        hints.update(_annotations(init))
    params = {k: v for k, v in spec.params().items() if k in hints and k not in INJECTED}
    if not params:
        return
    fields: dict[str, Any] = {k: (hints[k], None) for k in params}
    model = create_model(
        f"{spec.name}_params",
        __config__=ConfigDict(arbitrary_types_allowed=True),
        **fields,
    )
    try:
        model.model_validate(params)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(None, exc, (where,))) from None


def accepted_parameters(factory: object) -> set[str] | None:
    """Keyword parameters ``factory`` accepts; None when it takes ``**kwargs``
    that nothing in its class hierarchy names (anything may be valid)."""
    chain = _inits(factory)
    if not chain or _named(chain[-1])[1]:  # the last one still passes **kwargs on
        return None
    accepted = set().union(*(_named(init)[0] for init in chain))
    return accepted - {"self"} if inspect.isclass(factory) else accepted


def _named(func: object) -> tuple[set[str], bool]:
    try:
        sig = inspect.signature(func)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return set(), True
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = {p.name for p in sig.parameters.values() if p.kind in kinds}
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    return named, open_ended


def check_stage(stages: Registry[Any], spec: StageSpec, where: str) -> None:
    """ConfigError when ``spec.name`` is not registered in ``stages``, one of its
    parameters is not one the factory takes, or its ``llm`` parameter and
    ``needs_llm`` flag disagree; ``where`` is the entry's location in the
    config (``fusions.2``)."""
    try:
        factory = stages.get(spec.name)
    except ConfigError as exc:
        raise ConfigError(f"{where}.name: {exc}") from None
    accepted = accepted_parameters(factory)
    if accepted is None:
        return
    _check_llm_flag(stages, spec, where, "llm" in accepted)
    kind = stages.kind
    valid = (accepted - INJECTED) | STAGE_KEYS.get(kind, frozenset())
    unknown = [p for p in spec.params() if p not in valid]
    if unknown:
        choices = ", ".join(sorted(valid | {"id"})) or "(none)"
        bad = ", ".join(repr(p) for p in unknown)
        noun = "parameter" if len(unknown) == 1 else "parameters"
        raise ConfigError(
            f"{where}.{unknown[0]}: unknown {noun} {bad} of {stages.noun} {spec.name!r}; "
            f"valid parameters: {choices}"
        )
    check_param_types(stages, spec, where)


def _check_llm_flag(stages: Registry[Any], spec: StageSpec, where: str, takes_llm: bool) -> None:
    """A stage class's ``needs_llm`` flag must match its ``llm`` parameter: the
    harness passes the client by the flag, so a mismatch would either never give
    the stage its model or pass a keyword it does not take."""
    made = stages.type_of(spec.name)
    if not issubclass(made, Stage) or made.needs_llm == takes_llm:
        return
    what = f"{stages.noun} {spec.name!r} ({made.__qualname__})"
    if takes_llm:
        raise ConfigError(
            f"{where}.name: {what} takes an llm parameter but does not declare "
            "needs_llm = True, so it would never be given the model"
        )
    raise ConfigError(f"{where}.name: {what} declares needs_llm = True but takes no llm parameter")


def validate_stages(cfg: BenchmarkConfig) -> None:
    """Check every stage entry of ``cfg`` (names, parameter names, the chunker's
    values, then each stage's own checks of its values and its inputs' roles:
    :func:`~retrieval_bench.harness.run.roles.check_roles`); the first problem
    raises :class:`ConfigError`."""
    for stages, where, spec in config_entries(cfg):
        check_stage(stages, spec, where)
    try:
        CHUNKERS.create(cfg.chunker.name, **cfg.chunker.params())
    except ConfigError as exc:
        raise ConfigError(f"chunker: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"chunker ({cfg.chunker.name}): {exc}") from None
    check_roles(cfg)


def question_ids(configs: Iterable[BenchmarkConfig]) -> tuple[set[str], set[str]]:
    """(the ids of the questions the runs of ``configs`` search — evaluated and
    train —, the ids of every row of their datasets), as the run stores them
    (``<dataset>:<id>`` when two datasets share an id)."""
    searched: set[str] = set()
    known: set[str] = set()
    for cfg in configs:
        prefix = len(cfg.datasets) > 1 and colliding_ids(cfg)
        for spec in cfg.datasets:
            loaded, examples, train = select_questions(spec)
            pre = f"{spec.name}{NAMESPACE_SEP}" if prefix else ""
            searched.update(pre + e.id for e in [*examples, *train])
            known.update(pre + e.id for e in loaded.examples)
    return searched, known


def check_stage_inputs(
    configs: Sequence[BenchmarkConfig], questions: Sequence[BenchmarkConfig] | None = None
) -> None:
    """Check the inputs every distinct stage entry of ``configs`` reads (an
    ``external`` predictions file, an ``ltr`` model file) against the question ids
    of ``questions`` (default: ``configs``), once each, before any snapshot is
    opened: a bad one raises :class:`ConfigError` naming the entry
    (``retrievers.1 (locagent): ...``). A fusion's or reranker's parameters carry
    its ``inputs`` as the stage graph resolves them (the default filled in). A
    sweep passes all its cells, so a file is read, and warned about, once."""
    searched, known = question_ids(questions if questions is not None else configs)
    seen: set[tuple[str, str]] = set()
    for cfg in configs:
        graph = cfg.stage_graph()
        for stages, where, spec in config_entries(cfg):
            params = spec.params()
            if stages.kind in ("fusions", "rerankers"):
                params["inputs"] = list(graph.node(spec.label).inputs)
            key = (stages.kind, json.dumps([spec.model_dump(mode="json"), params],
                                           sort_keys=True, default=str))  # fmt: skip
            made = stages.type_of(spec.name)
            if key in seen or not issubclass(made, Stage):
                continue
            seen.add(key)
            try:
                made.check_inputs(params, searched, known)
            except RBenchError as exc:
                raise ConfigError(f"{where} ({spec.label}): {exc}") from None

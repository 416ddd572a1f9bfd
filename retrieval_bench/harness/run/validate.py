"""Checking a benchmark config's stages before any work is done.

Pydantic validates the config's own keys; a stage entry's further keys are
the stage's parameters, which its class declares as ``Params``
(:mod:`retrieval_bench.contracts.params`). They are checked here, before a
snapshot is opened or a file chunked: a typo such as ``{name: rrf, krrf: 60}``
must stop the run with a message naming the parameter and the valid ones, not
surface later as a stage that "failed" on every query and scored 0; a value of
the wrong type names the key (``retrievers.1.k1: Input should be a valid
number``). The chunker is also instantiated (cheap,
and its value checks, such as a negative ``budget``, then fail here too).
Retrievers, fusions and rerankers are not instantiated: some load models when
built; a stage checks its values and its inputs' roles itself
(:mod:`~retrieval_bench.harness.run.roles`). The files a stage reads are checked
against the run's question ids by
:func:`check_stage_inputs` (:meth:`~retrieval_bench.contracts.stage.Stage.check_inputs`),
once per run or sweep, after the datasets are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.contracts.registry import CHUNKERS
from retrieval_bench.contracts.stage import Stage
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.harness.run.groups import NAMESPACE_SEP, colliding_ids
from retrieval_bench.harness.run.prepare import select_questions
from retrieval_bench.harness.run.roles import check_roles
from retrieval_bench.plan import REGISTRY_OF, Plan, compile_plan


def validate_stages(cfg: BenchmarkConfig | Plan) -> Plan:
    """Check every stage entry of ``cfg`` (names and parameters, read as each class's
    ``Params`` when the plan is compiled; the chunker's values; then each stage's own
    checks of its values and its inputs' roles:
    :func:`~retrieval_bench.harness.run.roles.check_roles`); the first problem raises
    :class:`ConfigError`. Returns the compiled plan."""
    plan = compile_plan(cfg)
    cfg = plan.config
    try:
        CHUNKERS.create(cfg.chunker.name, plan.chunker)
    except ConfigError as exc:
        raise ConfigError(f"chunker: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"chunker ({cfg.chunker.name}): {exc}") from None
    check_roles(cfg)
    return plan


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
        for node in cfg.stage_graph():
            spec, params = node.spec, node.spec.params()
            if node.kind != "retriever":
                params["inputs"] = list(node.inputs)
            key = (node.kind, json.dumps([spec.model_dump(mode="json"), params],
                                         sort_keys=True, default=str))  # fmt: skip
            made = REGISTRY_OF[node.kind].type_of(spec.name)
            if key in seen or not issubclass(made, Stage):
                continue
            seen.add(key)
            try:
                made.check_inputs(params, searched, known)
            except RBenchError as exc:
                raise ConfigError(f"{node.where} ({spec.label}): {exc}") from None

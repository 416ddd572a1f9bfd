"""The pipeline as an explicit graph of stages (docs/architecture.md#the-stage-graph).

A config lists retrievers, fusions and rerankers; each stage may declare the
stages it reads with ``inputs: [label, ...]``:

* a **retriever** reads the corpus and declares no inputs;
* a **fusion** reads the runs it names (default: every retriever, in config
  order): retrievers, other fusions, or rerankers (an ``ltr`` fusion that reads
  the ``code-graph`` reranker's scores as features);
* a **reranker** reads exactly one other stage: ``inputs: [label]``, or the
  older ``input: label`` (default: the last fusion, else the last retriever).

:func:`compile_stages` turns that into a :class:`StageGraph`: nodes in
topological order (the config's order wherever every input comes first; a
cycle is a :class:`ConfigError`), each with its input labels. The harness runs
the nodes in one loop; ``Lost@k`` of a stage is measured against the inputs it
declares; a sweep shares a node's run between cells whose node keys are equal:
a node's key is its spec and the keys of its inputs, so two cells share a stage
exactly when everything upstream of it is the same (the prefix sharing of
PyTerrier's ``_exec_tree``).

Whether a fusion fuses chunks or files follows its inputs: when one of them
ranks files (``file:<path>`` ids) every input is lifted to files first;
``level: file`` asks for that lifting whatever the inputs rank. Any stage may
set ``cutoff: N``: its run keeps the top ``N`` per query (the ``%`` of the
Python builder, :mod:`retrieval_bench.builder`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.specs import StageSpec

StageKind = Literal["retriever", "fusion", "reranker"]
GRAPH_KEYS_OF: dict[StageKind, frozenset[str]] = {
    "retriever": frozenset({"cutoff"}),
    "fusion": frozenset({"inputs", "level", "cutoff"}),
    "reranker": frozenset({"inputs", "input", "cutoff"}),
}
"""Keys a stage entry of each kind may carry that the graph reads (the stages it
reads, a reranker's older ``input``, a fusion's ``level``, a ``cutoff``): they are
not the stage's parameters. The one list of them."""
GRAPH_KEYS = frozenset().union(*GRAPH_KEYS_OF.values())
"""Keys of a stage entry the graph reads, of any kind."""
LEVELS = ("file",)


def declared_inputs(spec: StageSpec) -> list[str] | None:
    """The labels ``spec`` names as its inputs (``inputs:`` or a reranker's older
    ``input:``), or None when it names none."""
    extra = spec.model_extra or {}
    if "inputs" in extra and "input" in extra:
        raise ConfigError(f"stage {spec.label}: give 'inputs' or 'input', not both")
    raw = extra.get("inputs", extra.get("input"))
    if raw is None:
        return None
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(x, str) and x for x in items):
        raise ConfigError(f"stage {spec.label}: inputs must be a list of stage labels, not {raw!r}")
    if len(set(items)) != len(items):
        raise ConfigError(f"stage {spec.label}: inputs name a stage twice: {items}")
    return list(items)


def spec_key(spec: StageSpec) -> str:
    """The canonical JSON of ``spec`` (its name, label and every key)."""
    return json.dumps(spec.model_dump(mode="json"), sort_keys=True, default=str)


@dataclass(frozen=True)
class StageNode:
    """One stage of the graph: what it is, its spec, and the labels it reads."""

    kind: StageKind
    spec: StageSpec
    inputs: tuple[str, ...]
    """Input labels in the order the stage receives their runs; () for a retriever."""
    level: str | None = None
    """``file``: a fusion lifts its inputs to files whatever they rank."""
    cutoff: int | None = None
    """Keep the top ``cutoff`` of the stage's run per query (None: all it returns)."""
    params: StageParams | None = None
    """The stage's typed parameters, once the graph is compiled into a plan
    (:func:`retrieval_bench.plan.compile_plan`); None in a graph of a config alone."""
    where: str = ""
    """The entry's place in the config (``retrievers.0``, ``fusions.2``), as errors name it."""

    @property
    def label(self) -> str:
        return self.spec.label

    def __repr__(self) -> str:
        reads = "corpus" if self.kind == "retriever" else " + ".join(self.inputs)
        cut = f" % {self.cutoff}" if self.cutoff else ""
        return f"{self.kind} {self.label} ({self.spec.name}) <- {reads}{cut}"


@dataclass(frozen=True)
class StageGraph:
    """The stages of one config in topological order (module doc)."""

    nodes: tuple[StageNode, ...]

    def __iter__(self) -> Iterator[StageNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, label: str) -> StageNode:
        for n in self.nodes:
            if n.label == label:
                return n
        raise KeyError(label)

    @property
    def labels(self) -> list[str]:
        return [n.label for n in self.nodes]

    def of_kind(self, kind: StageKind) -> list[StageNode]:
        return [n for n in self.nodes if n.kind == kind]

    def keys(self, *context: Any) -> dict[str, tuple[Any, ...]]:
        """Label → the node's key: its kind, spec, ``context`` (e.g. the candidate
        count) and its inputs' keys, so equal keys mean equal work upstream."""
        out: dict[str, tuple[Any, ...]] = {}
        for n in self.nodes:
            out[n.label] = (n.kind, spec_key(n.spec), *context, tuple(out[i] for i in n.inputs))
        return out

    def __repr__(self) -> str:
        return "StageGraph(\n" + "".join(f"  {n!r}\n" for n in self.nodes) + ")"


def default_inputs(
    kind: StageKind, retrievers: Sequence[str], fusions: Sequence[str]
) -> tuple[str, ...]:
    """What a stage that names no inputs reads: nothing for a retriever, every
    retriever for a fusion, the last fusion (else the last retriever) for a reranker."""
    if kind == "retriever":
        return ()
    if kind == "fusion":
        return tuple(retrievers)
    return tuple(fusions[-1:] or retrievers[-1:])


def _check_inputs(node_label: str, inputs: Sequence[str], labels: Sequence[str]) -> None:
    allowed = [label for label in labels if label != node_label]
    for label in inputs:
        if label not in allowed:
            raise ConfigError(
                f"stage {node_label}: input {label!r} is not another stage of this config; "
                f"choose from {', '.join(allowed) or '(none)'}"
            )


def _cutoff(spec: StageSpec) -> int | None:
    raw = (spec.model_extra or {}).get("cutoff")
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(f"stage {spec.label}: cutoff must be an integer >= 1, not {raw!r}")
    return raw


def compile_stages(
    retrievers: Sequence[StageSpec],
    fusions: Sequence[StageSpec] = (),
    rerankers: Sequence[StageSpec] = (),
) -> StageGraph:
    """The :class:`StageGraph` of a config's stage lists (module doc): nodes in an
    order where every input runs before the stages that read it (the config's order
    wherever that holds); a :class:`ConfigError` names the first stage whose inputs
    cannot be met, or a cycle."""
    nodes: list[StageNode] = []
    labels = [s.label for s in (*retrievers, *fusions, *rerankers)]
    for i, spec in enumerate(retrievers):
        if declared_inputs(spec) is not None or "level" in (spec.model_extra or {}):
            raise ConfigError(
                f"retriever {spec.label}: a retriever reads the corpus; it takes no inputs or level"
            )
        nodes.append(
            StageNode("retriever", spec, (), cutoff=_cutoff(spec), where=f"retrievers.{i}")
        )
    retriever_labels = [s.label for s in retrievers]
    fusion_labels = [s.label for s in fusions]
    for i, spec in enumerate(fusions):
        named = declared_inputs(spec)
        inputs = (
            default_inputs("fusion", retriever_labels, fusion_labels)
            if named is None
            else tuple(named)
        )
        _check_inputs(spec.label, inputs, labels)
        if not inputs:
            raise ConfigError(f"fusion {spec.label}: inputs is empty; name the runs it fuses")
        level = (spec.model_extra or {}).get("level")
        if level is not None and level not in LEVELS:
            raise ConfigError(f"fusion {spec.label}: level {level!r} is not one of {LEVELS}")
        nodes.append(StageNode("fusion", spec, inputs, level, _cutoff(spec), where=f"fusions.{i}"))
    default = default_inputs("reranker", retriever_labels, fusion_labels)
    for i, spec in enumerate(rerankers):
        named = declared_inputs(spec)
        if "level" in (spec.model_extra or {}):
            raise ConfigError(f"reranker {spec.label}: level applies to fusions only")
        inputs = default if named is None else tuple(named)
        if len(inputs) != 1:
            raise ConfigError(
                f"reranker {spec.label}: reranks exactly one stage; inputs names {len(inputs)}"
            )
        _check_inputs(spec.label, inputs, labels)
        where = f"rerankers.{i}"
        nodes.append(StageNode("reranker", spec, inputs, cutoff=_cutoff(spec), where=where))
    return StageGraph(_in_order(nodes))


def _in_order(nodes: list[StageNode]) -> tuple[StageNode, ...]:
    """``nodes`` with every input before its readers: repeatedly the first node (in
    config order) whose inputs are all placed (Kahn's algorithm, stable)."""
    placed: dict[str, StageNode] = {}
    pending = list(nodes)
    while pending:
        ready = next((n for n in pending if all(i in placed for i in n.inputs)), None)
        if ready is None:
            cycle = " -> ".join(n.label for n in pending)
            raise ConfigError(f"stages read each other in a cycle: {cycle}; break it with inputs:")
        placed[ready.label] = ready
        pending.remove(ready)
    return tuple(placed.values())

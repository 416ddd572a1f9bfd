"""A benchmark config compiled once into the typed, frozen :class:`Plan` a run reads.

``load_plan(path, overrides)`` reads a config file, applies the command line's
:class:`Overrides` to the file's mapping *before* anything is validated (so an
override is checked like the file's own keys, and nothing changes a config
after it was checked), parses it (:class:`~retrieval_bench.config.BenchmarkConfig`)
and compiles it (:func:`compile_plan`): the stage graph once, and every stage
entry's keys read as its class's typed ``Params``
(:mod:`retrieval_bench.contracts.params`), so an unknown or mistyped parameter
is a one-line error naming the entry and the key before any work. A run stores
the plan as ``plan.json`` beside ``config.json`` (docs/architecture.md#the-plan).

The plan's config is a private deep copy: changing the config a plan was
compiled from does not change the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from retrieval_bench.config import BenchmarkConfig, load_config
from retrieval_bench.contracts.params import StageParams, params_error
from retrieval_bench.contracts.registry import CHUNKERS, FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.specs import StageSpec
from retrieval_bench.stage_graph import GRAPH_KEYS_OF, StageGraph, StageKind

PLAN_FORMAT = 1
"""Version of ``plan.json``'s layout."""
STAGE_KEYS: dict[str, frozenset[str]] = {
    "chunkers": frozenset(),
    "retrievers": GRAPH_KEYS_OF["retriever"],
    "fusions": GRAPH_KEYS_OF["fusion"],
    "rerankers": GRAPH_KEYS_OF["reranker"],
}
"""Keys an entry of each registry kind may carry besides its ``Params``
(:data:`~retrieval_bench.stage_graph.GRAPH_KEYS_OF`); ``name`` and ``id`` are the
entry's own fields."""
REGISTRY_OF: dict[StageKind, Registry[Any]] = {
    "retriever": RETRIEVERS,
    "fusion": FUSIONS,
    "reranker": RERANKERS,
}


def entry_keys(stages: Registry[Any], name: str) -> list[str]:
    """Every key a config entry of ``name`` may set besides ``name`` and ``id``: its
    ``Params`` and the graph keys of its kind."""
    return sorted({*stages.params_of(name).model_fields, *STAGE_KEYS.get(stages.kind, ())})


def stage_params(stages: Registry[Any], spec: StageSpec, where: str) -> StageParams:
    """The typed parameters of the entry ``spec`` (its keys but the graph's, read as
    its class's ``Params``); a :class:`ConfigError` names the entry and the first bad
    key: ``retrievers.1.k1: Input should be a valid number``, ``fusions.0.krrf:
    unknown parameter 'krrf' of fusion 'rrf'; valid parameters: ...``."""
    try:
        params = stages.params_of(spec.name)
    except ConfigError as exc:
        raise ConfigError(f"{where}.name: {exc}") from None
    graph_keys = STAGE_KEYS.get(stages.kind, frozenset())
    own = {k: v for k, v in spec.params().items() if k not in graph_keys}
    try:
        return params.model_validate(own)
    except ValidationError as exc:
        of = f"{stages.noun} {spec.name!r}"
        raise ConfigError(params_error(params, exc, where, graph_keys, of)) from None


@dataclass(frozen=True)
class Plan:
    """One benchmark, compiled (module doc)."""

    config: BenchmarkConfig
    """The validated config (a private copy)."""
    graph: StageGraph
    """The stages in the order they run, each with its inputs and typed parameters."""
    chunker: StageParams
    """The chunker's typed parameters."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def params(self) -> dict[str, StageParams]:
        """Stage label → its typed parameters."""
        return {n.label: n.params for n in self.graph if n.params is not None}

    def to_json(self) -> dict[str, Any]:
        """``plan.json``: the graph with every stage's parameters as compiled
        (defaults filled in), the chunker, and the config it came from."""
        return {
            "format": PLAN_FORMAT,
            "name": self.name,
            "chunker": {"name": self.config.chunker.name, "params": _dump(self.chunker)},
            "stages": [
                {
                    "label": node.label,
                    "kind": node.kind,
                    "name": node.spec.name,
                    "inputs": list(node.inputs),
                    "level": node.level,
                    "cutoff": node.cutoff,
                    "params": None if node.params is None else _dump(node.params),
                }
                for node in self.graph
            ],
            "candidates": self.config.candidates,
            "config": self.config.model_dump(mode="json"),
        }


def _dump(params: StageParams) -> dict[str, Any]:
    return params.model_dump(mode="json", fallback=repr)


def compile_plan(cfg: BenchmarkConfig | Plan) -> Plan:
    """The :class:`Plan` of ``cfg`` (a plan is returned as it is): its graph, and
    every entry's parameters read as its class's ``Params`` (the first bad one
    raises :class:`ConfigError`, module doc)."""
    if isinstance(cfg, Plan):
        return cfg
    config = cfg.model_copy(deep=True)
    typed = StageGraph(
        tuple(
            replace(node, params=stage_params(REGISTRY_OF[node.kind], node.spec, node.where))
            for node in config.stage_graph()
        )
    )
    chunker = stage_params(CHUNKERS, config.chunker, "chunker")
    return Plan(config, typed, chunker)


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in a config, applied to the file's mapping
    before it is validated (``rbench run -k/--split/--limit/--jobs/...``)."""

    table_k: int | None = None
    """The printed table's cut-off (computed too when the config does not)."""
    split: str | None = None
    """Every dataset's evaluation split."""
    limit: int | None = None
    """The first N questions of each dataset."""
    executor: str | None = None
    jobs: int | None = None
    ray_address: str | None = None
    keep_llm_server: bool = False

    def apply(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of the config mapping ``data`` with these overrides in it."""
        out = dict(data)
        if self.table_k is not None:
            out["table_k"] = self.table_k
        datasets = out.get("datasets")
        if isinstance(datasets, list) and (self.split or self.limit is not None):
            out["datasets"] = [self._dataset(d) for d in datasets]
        if self.keep_llm_server:
            llm = out.get("llm")
            out["llm"] = {**(llm if isinstance(llm, Mapping) else {}), "keep_server": True}
        if self.executor or self.jobs is not None or self.ray_address:
            raw = out.get("executor")
            out["executor"] = self.executor_section(raw if isinstance(raw, Mapping) else {})
        return out

    def _dataset(self, entry: Any) -> Any:
        if not isinstance(entry, Mapping):
            return entry  # the config's own validation names it
        entry = dict(entry)
        if self.split:
            entry["split"] = self.split
        if self.limit is not None:
            entry["limit"] = self.limit
        return entry

    def executor_section(self, section: Mapping[str, Any]) -> dict[str, Any]:
        """``--executor``, ``--jobs`` and ``--ray-address`` over the config's
        ``executor:`` section (``--jobs`` alone turns a serial executor into
        ``processes``)."""
        spec = dict(section)
        if self.ray_address:
            spec.update(name="ray", address=self.ray_address)
        if self.executor:
            spec["name"] = self.executor
            if self.executor != "ray":
                spec["address"] = None
        if self.jobs is not None:
            spec["jobs"] = self.jobs
            serial = spec.get("name", "serial") == "serial"
            if not self.executor and not self.ray_address and serial:
                spec["name"] = "processes"
        return spec


def load_plan(
    path: Path | str, overrides: Overrides | None = None, data_root: Path | None = None
) -> Plan:
    """Read, override, validate and compile the config file ``path`` (module doc);
    relative paths in it resolve against its folder, as
    :func:`~retrieval_bench.config.load_config` does."""
    edit = (overrides or Overrides()).apply
    return compile_plan(load_config(path, data_root=data_root, edit=edit))

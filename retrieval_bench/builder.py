"""Pipelines written in Python, compiled to the same config as YAML
(docs/configuration.md#python-pipelines).

::

    import retrieval_bench as rb

    bm25 = rb.retriever("bm25")
    exact = rb.retriever("exact", terms="identifiers")
    pipe = (bm25 + exact) >> rb.fusion("rrf") >> rb.reranker("code-graph") % 10
    exp = rb.Experiment(pipe, {"name": "shop", "questions": "q.jsonl", "snapshot": "repo"},
                        baseline=bm25)
    exp.to_yaml()          # the config, as a YAML file would hold it
    result = exp.run()     # the same stored run, fingerprint and resume as that file

Operators, as in PyTerrier's ``transformer.py`` and ``_ops.py``: ``a + b`` is the
set of runs a fusion reads; ``x >> rb.fusion(...)`` fuses ``x`` (one stage or a
``+`` set); ``x >> rb.reranker(...)`` reranks the one stage ``x``; ``x % k`` keeps
the top ``k`` of ``x``'s run (the ``cutoff:`` key). ``repr`` prints the expression;
:meth:`Pipeline.graph` compiles the :class:`~retrieval_bench.stage_graph.StageGraph`.
A config holds ``inputs:`` only where they differ from the default (a fusion
reading every retriever in order, a reranker reading the last fusion), so a
pipeline and the YAML written by hand in that form have one fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from retrieval_bench.config import BenchmarkConfig, parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.identifiers import identifier_problem
from retrieval_bench.plan import Plan, compile_plan
from retrieval_bench.stage_graph import StageGraph, default_inputs

if TYPE_CHECKING:
    from retrieval_bench.harness.run.runner import BenchmarkResult
    from retrieval_bench.progress import Progress
    from retrieval_bench.workspace import Workspace

Kind = Literal["retriever", "fusion", "reranker"]


@dataclass(frozen=True)
class Template:
    """A fusion or reranker not yet attached to its inputs (``rb.fusion("rrf")``)."""

    kind: Kind
    name: str
    id: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __mod__(self, k: int) -> Template:
        return replace(self, params={**self.params, "cutoff": _cutoff(k)})


class Pipeline:
    """Something whose runs a later stage can read: one stage, or a ``+`` set."""

    def __add__(self, other: Pipeline) -> Union:
        if not isinstance(other, Pipeline):
            return NotImplemented
        return Union((*_members(self), *_members(other)))

    def __rshift__(self, template: Template) -> Stage:
        if not isinstance(template, Template):
            raise ConfigError(f"'>>' takes rb.fusion(...) or rb.reranker(...), not {template!r}")
        inputs = _members(self)
        if template.kind == "reranker" and len(inputs) != 1:
            raise ConfigError(
                f"reranker {template.id or template.name} reranks one stage; fuse {self!r} first"
            )
        return Stage(template.kind, template.name, template.id, dict(template.params), inputs)

    def stages(self) -> list[Stage]:
        """Every stage this pipeline runs, upstream first, each once."""
        return _stages([self])

    def graph(self) -> StageGraph:
        """The compiled stage graph (a :class:`ConfigError` if inputs cannot be met)."""
        return _Sections.of(self.stages()).stage_graph()


@dataclass(frozen=True, eq=False)
class Stage(Pipeline):
    """One configured stage and the stages it reads."""

    kind: Kind
    name: str
    id: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[Stage, ...] = ()

    @property
    def label(self) -> str:
        return self.id or self.name

    def __mod__(self, k: int) -> Stage:
        return replace(self, params={**self.params, "cutoff": _cutoff(k)})

    def entry(self, default_inputs: tuple[str, ...]) -> dict[str, Any]:
        """The config entry: name, id, parameters, and inputs unless the default."""
        out: dict[str, Any] = {"name": self.name}
        if self.id is not None:
            out["id"] = self.id
        out.update({k: v for k, v in self.params.items() if k != "cutoff"})
        labels = [s.label for s in self.inputs]
        if self.kind != "retriever" and tuple(labels) != default_inputs:
            out["inputs"] = labels
        if "cutoff" in self.params:
            out["cutoff"] = self.params["cutoff"]
        return out

    def __repr__(self) -> str:
        params = {k: v for k, v in self.params.items() if k != "cutoff"}
        me = f"{self.label}({_args(params)})" if params else self.label
        if "cutoff" in self.params:
            me += f" % {self.params['cutoff']}"
        return f"{_union_repr(self.inputs)} >> {me}" if self.inputs else me


@dataclass(frozen=True)
class Union(Pipeline):
    """Runs read together by the next fusion (``a + b``)."""

    members: tuple[Stage, ...]

    def __repr__(self) -> str:
        return _union_repr(self.members)


def _members(p: Pipeline) -> tuple[Stage, ...]:
    if isinstance(p, Union):
        return p.members
    if isinstance(p, Stage):
        return (p,)
    raise ConfigError(f"not a pipeline: {p!r}")


def _stages(pipelines: Sequence[Pipeline]) -> list[Stage]:
    """Every stage of ``pipelines``, upstream first, each once (one label, one stage)."""
    seen: dict[str, Stage] = {}
    for pipeline in pipelines:
        for member in _members(pipeline):
            _collect(member, seen)
    return list(seen.values())


def _collect(stage: Stage, seen: dict[str, Stage]) -> None:
    for up in stage.inputs:
        _collect(up, seen)
    known = seen.get(stage.label)
    if known is None:
        seen[stage.label] = stage
    elif known is not stage and (known.kind, known.name, dict(known.params)) != (
        stage.kind,
        stage.name,
        dict(stage.params),
    ):
        raise ConfigError(f"two different stages are labelled {stage.label!r}: give one an id")


def _union_repr(members: Sequence[Stage]) -> str:
    if len(members) == 1:
        return repr(members[0])
    return "(" + " + ".join(repr(m) for m in members) + ")"


def _args(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _cutoff(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"'% k' needs an integer k >= 1, not {k!r}")
    return k


def _label(name: str, id: str | None) -> None:
    """A :class:`ConfigError` unless the stage's label is an identifier: it names the
    run's files (:mod:`retrieval_bench.identifiers`), checked when the stage is made."""
    problem = identifier_problem(id if id is not None else name)
    if problem is not None:
        what = "id" if id is not None else "stage label (its name; give an id=)"
        raise ConfigError(f"{what}: {problem}")


def retriever(name: str, id: str | None = None, **params: Any) -> Stage:
    """A retriever stage (``rb.retriever("bm25", k1=1.2)``); ``id`` is its label."""
    _label(name, id)
    return Stage("retriever", name, id, params)


def fusion(name: str, id: str | None = None, **params: Any) -> Template:
    """A fusion, attached with ``>>`` to the runs it reads."""
    _label(name, id)
    return Template("fusion", name, id, params)


def reranker(name: str, id: str | None = None, **params: Any) -> Template:
    """A reranker, attached with ``>>`` to the one stage it reranks."""
    _label(name, id)
    return Template("reranker", name, id, params)


@dataclass
class _Sections:
    """The three stage lists of a config, with default inputs left out."""

    retrievers: list[dict[str, Any]]
    fusions: list[dict[str, Any]]
    rerankers: list[dict[str, Any]]

    @classmethod
    def of(cls, stages: Sequence[Stage]) -> _Sections:
        by_kind: dict[Kind, list[Stage]] = {"retriever": [], "fusion": [], "reranker": []}
        for s in stages:
            by_kind[s.kind].append(s)
        retrievers = [s.label for s in by_kind["retriever"]]
        fusions = [s.label for s in by_kind["fusion"]]
        entries = {
            kind: [s.entry(default_inputs(kind, retrievers, fusions)) for s in members]
            for kind, members in by_kind.items()
        }
        return cls(entries["retriever"], entries["fusion"], entries["reranker"])

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"retrievers": self.retrievers}
        if self.fusions:
            out["fusions"] = self.fusions
        if self.rerankers:
            out["rerankers"] = self.rerankers
        return out

    def stage_graph(self) -> StageGraph:
        from retrieval_bench.specs import StageSpec
        from retrieval_bench.stage_graph import compile_stages

        specs = [[StageSpec(**e) for e in part] for part in (self.retrievers, self.fusions,
                                                            self.rerankers)]  # fmt: skip
        return compile_stages(*specs)


class Experiment:
    """Pipelines over datasets: one benchmark config (module doc).

    Parameters:
        pipelines: one pipeline or several; their stages are run once each.
        datasets: one dataset entry or several, as under ``datasets:`` in YAML.
        name: the benchmark's name.
        baseline: the stage the paired columns compare with (a stage or its label).
        metric: the baseline's metric (``Acc@5``); None: the config's default.
        base_dir: folder relative paths resolve against (default: the current one).
        config: any other top-level config key (``chunker``, ``candidates``,
            ``metrics``, ``table_columns``, ``repos``, ``executor`` ...).
    """

    def __init__(
        self,
        pipelines: Pipeline | Sequence[Pipeline],
        datasets: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        name: str = "experiment",
        baseline: Stage | str | None = None,
        metric: str | None = None,
        base_dir: str | Path | None = None,
        **config: Any,
    ) -> None:
        self.pipelines = [pipelines] if isinstance(pipelines, Pipeline) else list(pipelines)
        self.datasets = [dict(datasets)] if isinstance(datasets, Mapping) else [
            dict(d) for d in datasets
        ]  # fmt: skip
        for d in self.datasets:
            problem = identifier_problem(d.get("name"))
            if problem is not None:
                raise ConfigError(f"dataset name: {problem}")
        self.name = name
        self.baseline = baseline.label if isinstance(baseline, Stage) else baseline
        self.metric = metric
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self.extra = config

    def stages(self) -> list[Stage]:
        return _stages(self.pipelines)

    def to_config(self) -> dict[str, Any]:
        """The config mapping, as a YAML file would hold it."""
        data: dict[str, Any] = {"name": self.name, "datasets": self.datasets}
        data.update(_Sections.of(self.stages()).as_dict())
        data.update(self.extra)
        if self.baseline is not None or self.metric is not None:
            data["baseline"] = {
                k: v for k, v in (("stage", self.baseline), ("metric", self.metric)) if v
            }
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_config(), sort_keys=False)

    def config(self) -> BenchmarkConfig:
        """The validated config (relative paths resolved against ``base_dir``)."""
        return parse_config(self.to_config(), f"experiment {self.name}", self.base_dir)

    def plan(self) -> Plan:
        """The experiment compiled (:func:`~retrieval_bench.plan.compile_plan`): what
        :meth:`run` runs; a bad stage name or parameter raises here."""
        return compile_plan(self.config())

    def run(
        self, workspace: Workspace | None = None, progress: Progress | None = None
    ) -> BenchmarkResult:
        """Run it as ``rbench run`` runs a config file: stored, fingerprinted, resumable."""
        from retrieval_bench.harness.run.runner import run_benchmark

        return run_benchmark(self.plan(), workspace, progress)

    def __repr__(self) -> str:
        return f"Experiment({self.name!r}, {self.pipelines!r})"

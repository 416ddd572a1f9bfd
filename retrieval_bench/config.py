"""The benchmark config (docs/configuration.md): one YAML or TOML file, validated with pydantic.

Example (YAML)::

    name: fixtures
    datasets:
      - name: shopapi   # relative paths: relative to the config file's folder
        questions: ../../fixtures/repos/shopapi/questions.jsonl
        snapshot: ../../fixtures/repos/shopapi
    chunker: {name: ast, budget: 512}
    retrievers:
      - {name: dense}
      - {name: bm25}
      - {name: exact, terms: identifiers}
    fusions:
      - {name: rrf, k_rrf: 60}
    candidates: 50
    metrics: {ks: [1, 3, 5, 10], budgets: [8000]}
    answerer: {rung: instructions, input: rrf, k: 5}   # optional (docs/stages.md#answerer)
    answer_metrics: [token_f1, grounded_refs]         # docs/metrics.md#answer-metrics

Stage entries take ``name`` (the registry name), an optional ``id`` (the
stage label, default = name) and any further keys, which are passed to the
factory as keyword parameters. Errors name the bad key, e.g.
``retrievers.1.k1: Input should be a valid number``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from retrieval_bench.baseline_spec import BaselineSpec
from retrieval_bench.config_defaults import CANDIDATES, TABLE_K
from retrieval_bench.config_files import read_mapping
from retrieval_bench.data_root import check_data_files, expand_data_root
from retrieval_bench.dataset_spec import DatasetSpec, MetricsSpec  # re-exported
from retrieval_bench.errors import ConfigError
from retrieval_bench.executor_spec import ExecutorSpec  # re-exported (executor_spec.py)
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.measures import parse_measure
from retrieval_bench.specs import (
    MetricSpec,
    StageSpec,
    duplicate_labels,
    format_validation_error,
)
from retrieval_bench.stage_graph import StageGraph, compile_stages

ANSWER_RUNGS = ("bare", "instructions", "where_to_look", "file_tree")
"""The answer-prompt rungs (docs/stages.md#answerer; :mod:`retrieval_bench.answering.prompts`)."""
ANSWER_STAGE = "answer"
"""The stage label answers and answer metrics are stored under."""


class AnswererSpec(BaseModel):
    """The ``answerer:`` section: answer each question from one stage's top chunks
    (docs/stages.md#answerer) and score the answers with ``answer_metrics``."""

    model_config = ConfigDict(extra="forbid")
    rung: str = "instructions"
    """One of ``bare``, ``instructions``, ``where_to_look``, ``file_tree``."""
    input: str | None = None
    """Stage label whose top chunks feed the answer (default: the last stage)."""
    k: int = Field(default=5, gt=0)
    max_context_tokens: int = Field(default=3000, gt=0)
    max_tokens: int = Field(default=384, gt=0)
    temperature: float = Field(default=0.0, ge=0)
    tree_lines: int = Field(default=40, gt=0)  # line cap of the ``file_tree`` rung's tree

    @field_validator("rung")
    @classmethod
    def _known_rung(cls, v: str) -> str:
        if v not in ANSWER_RUNGS:
            raise ValueError(f"unknown rung {v!r}; choose one of: {', '.join(ANSWER_RUNGS)}")
        return v


class BenchmarkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    _graph: tuple[tuple[int, ...], StageGraph] | None = PrivateAttr(default=None)
    name: str
    datasets: list[DatasetSpec] = Field(min_length=1)
    chunker: StageSpec = Field(default_factory=lambda: StageSpec(name="ast"))
    retrievers: list[StageSpec] = Field(min_length=1)
    fusions: list[StageSpec] = Field(default_factory=list)
    rerankers: list[StageSpec] = Field(default_factory=list)
    """Each reranks one earlier stage (``inputs:``; fusions' too: :mod:`.stage_graph`)."""
    llm: LLMSpec = Field(default_factory=LLMSpec)
    candidates: int = Field(default=CANDIDATES, gt=0)
    """How many chunks each retriever and fusion returns per query."""
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    table_k: int = Field(default=TABLE_K, gt=0)
    """The cut-off shown in the printed per-stage table."""
    table_columns: list[str] | None = None
    """The printed table's metric columns (e.g. ``[Acc@1, Acc@3, MRR]``); None = the default."""
    baseline: BaselineSpec | None = None
    """What the table's paired columns compare with (None: :mod:`.baseline_spec` defaults)."""
    repos: dict[str, str] = Field(default_factory=dict)
    """``owner/name`` → local git bundle, mirror or URL for rows with ``repo`` + ``commit``
    (default: ``https://github.com/<owner>/<name>.git``; ``$RBENCH_REPOS`` overrides)."""
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    """Where per-question snapshot groups run (docs/configuration.md#executor)."""
    answerer: AnswererSpec | None = None
    """The answering stage (docs/stages.md#answerer); None = no answers."""
    answer_metrics: list[MetricSpec] = Field(default_factory=list)
    """Answer-quality metrics (docs/metrics.md#answer-metrics): registry names with
    parameters, composites via ``parts:`` (see :mod:`retrieval_bench.metrics.answer.factory`).
    A benchmark run scores the answerer's answers with them (default: the text metrics
    and ``grounded_refs``); ``rbench eval --config`` reads them too."""

    @field_validator("repos")
    @classmethod
    def _no_option_like_repos(cls, v: dict[str, str]) -> dict[str, str]:
        for repo, where in v.items():
            if where.lstrip().startswith("-"):  # git would read it as an option
                raise ValueError(
                    f"{repo}: {where!r} starts with '-'; give a URL, a local path "
                    "(./-name) or a git bundle"
                )
        return v

    @field_validator("answer_metrics")
    @classmethod
    def _unique_metric_labels(cls, v: list[MetricSpec]) -> list[MetricSpec]:
        dupes = duplicate_labels(v)
        if dupes:
            raise ValueError(f"metric labels must be unique; give an 'id' to: {', '.join(dupes)}")
        return v

    @model_validator(mode="after")
    def _unique_labels(self) -> BenchmarkConfig:
        labels = [s.label for s in self.stage_specs()]
        if ANSWER_STAGE in labels:  # with or without an answerer: stored runs keep the label
            raise ValueError(
                f"stage label {ANSWER_STAGE!r} is reserved for the answerer's results; "
                "give that stage another 'id'"
            )
        dupes = duplicate_labels(self.stage_specs())
        if dupes:
            raise ValueError(f"stage labels must be unique; give an 'id' to: {', '.join(dupes)}")
        try:
            self.stage_graph()
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        for ds in self.datasets:
            if ds.train_split is not None and ds.train_split == ds.split:
                raise ValueError(f"dataset {ds.name}: train_split must differ from split")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError("dataset names must be unique")
        shown = [*(self.table_columns or []), (self.baseline and self.baseline.metric) or ""]
        for k in [parse_measure(c).cutoff for c in shown if c]:
            if k is not None and k not in self.metrics.ks:
                self.metrics.ks = sorted({*self.metrics.ks, k})
        if self.table_k not in self.metrics.ks:
            self.metrics.ks = sorted({*self.metrics.ks, self.table_k})
        if self.answerer is not None:
            self._check_answerer(self.answerer, labels)
        if self.baseline is not None:
            self.baseline.check_stage(labels)
        return self

    def _check_answerer(self, spec: AnswererSpec, labels: list[str]) -> None:
        if spec.input is not None and spec.input not in labels:
            raise ValueError(
                f"answerer.input: {spec.input!r} is not a stage label; "
                f"choose one of: {', '.join(labels)}"
            )

    def answer_input(self) -> str:
        """The stage whose chunks feed the answerer: ``answerer.input``, else the
        last reranker, else the last fusion, else the last retriever."""
        if self.answerer is not None and self.answerer.input is not None:
            return self.answerer.input
        return self.stage_specs()[-1].label

    def check_answer_stage(self, source: str = "config") -> None:
        """ConfigError when ``answer_metrics`` are named without an ``answerer:``
        section (a benchmark run has no answers to score then).

        Not part of the schema: ``rbench eval --config`` may read the metrics of a
        benchmark config that has no answerer.
        """
        if self.answer_metrics and self.answerer is None:
            raise ConfigError(
                f"{source}: answer_metrics need an answerer: section "
                "(e.g. answerer: {rung: instructions}), or remove answer_metrics"
            )

    def results_dump(self) -> dict[str, Any]:
        """The config as JSON data without what cannot change the results (the executor)."""
        data = self.model_dump(mode="json")
        data.pop("executor", None)
        return data

    def stage_specs(self) -> list[StageSpec]:
        """Every stage in pipeline order: retrievers, fusions, rerankers."""
        return [*self.retrievers, *self.fusions, *self.rerankers]

    def stage_graph(self) -> StageGraph:
        """The stages as a graph, in the order they run (:mod:`.stage_graph`):
        compiled once, when the config is validated (again only for a copy whose
        stage lists were replaced, as ``model_copy(update=...)`` does)."""
        key = tuple(id(s) for s in self.stage_specs())
        if self._graph is None or self._graph[0] != key:
            graph = compile_stages(self.retrievers, self.fusions, self.rerankers)
            self._graph = (key, graph)
        return self._graph[1]

    def fingerprint(self) -> str:
        data = self.results_dump()
        if not data.get("answer_metrics"):
            # configs without answer metrics keep the fingerprint they had before the field
            data.pop("answer_metrics", None)
        if data.get("answerer") is None:
            data.pop("answerer", None)  # likewise for configs without an answerer
        for key in ("table_columns", "repos", "baseline"):  # and for the later optional keys
            if not data.get(key):
                data.pop(key, None)
        if data.get("metrics", {}).get("levels") == ["file", "module", "function"]:
            data["metrics"].pop("levels")  # the default: configs from before the key
        if data.get("metrics", {}).get("conventions") == "rbench":
            # the rules of every config from before the key: those keep their fingerprint,
            # and a config under LocAgent's (the default) gets a new one
            data["metrics"].pop("conventions")
        for ds in data.get("datasets", []):
            for key, default in (
                ("repo", None), ("commit_is", "state"), ("gold_paths", "exact"),
                ("hash_split", None), ("gold_functions", None),
            ):  # fmt: skip
                if ds.get(key) == default:
                    ds.pop(key, None)
        canon = json.dumps(data, sort_keys=True)
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


_SHORT_FORM_KEYS = {"answer_metrics", "llm"}
_SPEC_LIST: TypeAdapter[list[MetricSpec]] = TypeAdapter(list[MetricSpec])

PATH_PARAMS = (
    "model_path",
    "model_file",
    "adapter",
    "index_uri",
    "cache_dir",
    "rg_path",
    "path",
    "id_map",
)
"""Stage parameters that name a file or folder: resolved like the dataset paths."""


def parse_config(
    data: dict[str, Any], source: str = "config", base_dir: Path | None = None
) -> BenchmarkConfig:
    """Validate a config mapping; relative paths (dataset ``questions`` and folder
    ``snapshot``, stage parameters in :data:`PATH_PARAMS`) resolve against ``base_dir``."""
    try:
        cfg = BenchmarkConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from None
    if base_dir is not None:
        for ds in cfg.datasets:
            if not ds.questions.is_absolute():
                ds.questions = (base_dir / ds.questions).resolve()
            if ds.gold_functions is not None and not ds.gold_functions.is_absolute():
                ds.gold_functions = (base_dir / ds.gold_functions).resolve()
            if ds.snapshot is None:
                continue
            snap = Path(ds.snapshot)
            if "==" not in ds.snapshot and "@" not in ds.snapshot and not snap.is_absolute():
                ds.snapshot = str((base_dir / snap).resolve())
        for repo, where in cfg.repos.items():
            local = "://" not in where and not where.startswith(("~", "git@"))
            if local and not Path(where).is_absolute():
                cfg.repos[repo] = str((base_dir / where).resolve())
        for spec in [cfg.chunker, *cfg.stage_specs()]:
            extra = spec.model_extra or {}
            for key in PATH_PARAMS:
                value = extra.get(key)
                if not isinstance(value, str) or not value or value.startswith("~"):
                    continue
                if not Path(value).is_absolute():
                    extra[key] = str((base_dir / value).resolve())
    return cfg


def load_metric_specs(path: Path | str) -> tuple[list[MetricSpec], LLMSpec | None]:
    """The ``answer_metrics`` (and ``llm``) of a YAML/TOML file.

    The file is either a full benchmark config (validated as one) or just
    ``{answer_metrics: [...], llm: {...}}``. The LLM spec is None when the
    file has no ``llm:`` section; the metric list may be empty.
    """
    path = Path(path)
    data = read_mapping(path, "metrics file", "file", "with an answer_metrics: list")
    if not set(data) <= _SHORT_FORM_KEYS:
        cfg = parse_config(data, str(path))
        return list(cfg.answer_metrics), (cfg.llm if "llm" in data else None)
    try:
        specs = _SPEC_LIST.validate_python(data.get("answer_metrics") or [])
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, ("answer_metrics",))) from None
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
            raise ConfigError(format_validation_error(str(path), exc, ("llm",))) from None
    return specs, llm_spec


def load_config(
    path: Path | str,
    base_dir: Path | None = None,
    data_root: Path | None = None,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> BenchmarkConfig:
    """Load YAML (``.yaml``/``.yml``) or TOML (``.toml``).

    Relative paths inside resolve against ``base_dir``, by default the config
    file's own folder: a config means the same files whatever directory it is
    run from (``rbench run benchmarks/configs/fixtures.yaml`` from the
    repository root, or ``rbench run fixtures.yaml`` from its folder).
    ``data_root`` is ``--data-root`` (:mod:`retrieval_bench.data_root`); ``edit``
    changes the file's mapping before it is validated (the command line's
    overrides: :class:`retrieval_bench.plan.Overrides`).
    """
    path = Path(path)
    data = read_mapping(path, "config file", "benchmark config", "at the top level")
    if "sweep" in data:
        raise ConfigError(f"{path} is a sweep config: use rbench sweep {path}")
    if edit is not None:
        data = edit(data)
    return load_parsed(data, path, base_dir or path.resolve().parent, data_root)


def load_parsed(
    data: dict[str, Any], path: Path, base_dir: Path, data_root: Path | None = None
) -> BenchmarkConfig:
    """:func:`load_config` of a file's mapping ``data`` (``rbench sweep`` reads it itself)."""
    root = expand_data_root(data, base_dir, str(path), data_root)
    cfg = parse_config(data, str(path), base_dir)
    check_data_files(root, {f"dataset {d.name}:": d.questions for d in cfg.datasets}, str(path))
    cfg.check_answer_stage(str(path))
    return cfg

"""The ``sweep:`` section of a benchmark config and the file that holds it.

A sweep config is a plain benchmark config (the *base*) plus a ``sweep:``
section naming the stage parameters to vary, by path, and how to pick the
winner (docs/configuration.md#sweep)::

    sweep:
      grid:
        chunker.budget: [256, 512, 1024]
        retrievers.bm25.k1: [0.9, 1.2, 1.5]
        rerankers: [[], [llm-logprob]]
      random: 5          # optional: 5 distinct cells of the grid, drawn with seed
      seed: 0
      objective: Acc@5   # the metric maximised on select_on, reported on report_on
      select_on: dev
      report_on: test

This module only reads and type-checks the section; whether each path names
a parameter of the base config is checked when the grid is expanded
(:func:`retrieval_bench.sweep.grid.expand`), where the registry is at hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from retrieval_bench.config import PATH_PARAMS, BenchmarkConfig, load_parsed
from retrieval_bench.config_files import read_mapping
from retrieval_bench.data_root import expand_data_root
from retrieval_bench.errors import ConfigError
from retrieval_bench.measures import parse_measure
from retrieval_bench.specs import format_validation_error

STAGE_SECTIONS = ("chunker", "retrievers", "fusions", "rerankers")
"""The config sections whose entries are stages (their parameters are sweepable)."""


class SweepSpec(BaseModel):
    """The ``sweep:`` section: the grid of alternatives and how cells are judged."""

    model_config = ConfigDict(extra="forbid")
    grid: dict[str, list[Any]] = Field(min_length=1)
    """Path → alternatives, in the file's key order (which is the expansion order):
    the whole ``chunker`` (chunker entries), or ``chunker.name`` and
    ``chunker.<param>``; ``<kind>.<label>.<param>``, the whole lists ``retrievers``,
    ``fusions``, ``rerankers``, and ``candidates``, ``table_k``. Nested mappings
    (TOML's dotted keys) are read as dotted paths."""
    random: int | None = Field(default=None, gt=0)
    """Sample this many distinct cells of the grid instead of running all of it."""
    seed: int = 0
    """Seed of the ``random:`` sample (the same seed draws the same cells)."""
    objective: str = "Acc@5"
    """The retrieval metric to maximise (an ``evaluate_stage`` name; higher is better)."""
    select_on: str | None = "dev"
    """The split the best cell is chosen on."""
    report_on: str | None = "test"
    """The split the chosen cell is reported on (never the one it was chosen on)."""
    max_cells: int = Field(default=1000, gt=0)
    """The most cells a sweep may run (``--max-cells`` overrides it)."""

    @field_validator("grid", mode="before")
    @classmethod
    def _dotted_paths(cls, v: Any) -> Any:
        if not isinstance(v, Mapping):
            return v
        return _flatten(v, "")

    @field_validator("objective")
    @classmethod
    def _known_objective(cls, v: str) -> str:
        objective_cutoffs(v)
        return v

    @model_validator(mode="after")
    def _distinct_splits(self) -> SweepSpec:
        if self.select_on is not None and self.select_on == self.report_on:
            raise ValueError(
                f"select_on and report_on are both {self.select_on!r}: a cell chosen on "
                "a split must be reported on another one"
            )
        return self


def _flatten(mapping: Mapping[Any, Any], prefix: str) -> dict[str, Any]:
    """``{chunker: {budget: [..]}}`` → ``{"chunker.budget": [..]}`` (lists are leaves)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def objective_cutoffs(objective: str) -> tuple[int | None, int | None]:
    """The rank cut-off and token budget ``objective`` needs (``(5, None)`` for
    ``Acc@5``, ``(None, 8000)`` for ``F1@8k``, ``(None, None)`` for ``MRR``);
    ValueError naming the accepted forms for anything the run does not compute
    (:func:`~retrieval_bench.measures.parse_measure`)."""
    try:
        measure = parse_measure(objective, strict=True)
    except ConfigError as exc:
        raise ValueError(f"unknown objective: {exc}") from None
    if not measure.higher_is_better:
        raise ValueError(
            f"objective {objective!r} counts lost gold files; it is not a quality to maximise"
        )
    return measure.cutoff, measure.budget


def with_objective(cfg: BenchmarkConfig, objective: str) -> BenchmarkConfig:
    """``cfg`` with the objective's cut-off added to ``metrics.ks`` (or its budget
    to ``metrics.budgets``) when absent, as the config does for ``table_k``: every
    cell then computes the metric it is judged on. ``cfg`` itself is unchanged."""
    k, budget = objective_cutoffs(objective)
    if (k is None or k in cfg.metrics.ks) and (budget is None or budget in cfg.metrics.budgets):
        return cfg
    out = cfg.model_copy(deep=True)
    if k is not None:
        out.metrics.ks = sorted({*out.metrics.ks, k})
    if budget is not None:
        out.metrics.budgets = sorted({*out.metrics.budgets, budget})
    return out


def _resolve(value: Any, base_dir: Path) -> Any:
    """A path parameter's value, resolved against ``base_dir`` like :func:`parse_config`."""
    if not isinstance(value, str) or not value or value.startswith("~"):
        return value
    return value if Path(value).is_absolute() else str((base_dir / value).resolve())


def _resolve_entry(entry: Any, base_dir: Path) -> Any:
    """A stage entry with its path parameters resolved (anything else as it is)."""
    if not isinstance(entry, Mapping):
        return entry
    return {k: _resolve(v, base_dir) if k in PATH_PARAMS else v for k, v in entry.items()}


def resolve_grid_paths(spec: SweepSpec, base_dir: Path) -> SweepSpec:
    """``spec`` with the path parameters its alternatives set (``model_path``,
    ``index_uri``, … in :data:`~retrieval_bench.config.PATH_PARAMS`, as a path's last
    part or inside a whole-list or whole-chunker alternative's entries) resolved
    against ``base_dir``: a sweep means the same files whatever directory it runs from."""
    grid: dict[str, list[Any]] = {}
    for path, alternatives in spec.grid.items():
        parts = path.split(".")
        if parts[0] in STAGE_SECTIONS and len(parts) >= 2 and parts[-1] in PATH_PARAMS:
            alternatives = [_resolve(v, base_dir) for v in alternatives]
        elif path == "chunker":  # whole chunker entries
            alternatives = [_resolve_entry(alt, base_dir) for alt in alternatives]
        elif path in STAGE_SECTIONS[1:]:
            alternatives = [
                [_resolve_entry(e, base_dir) for e in alt] if isinstance(alt, list) else alt
                for alt in alternatives
            ]
        grid[path] = alternatives
    return spec.model_copy(update={"grid": grid})


def parse_sweep(data: Any, source: str = "config") -> SweepSpec:
    """Validate a ``sweep:`` mapping; errors read ``SOURCE: sweep.grid.x: ...``."""
    try:
        return SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc, ("sweep",))) from None


def load_sweep_config(
    path: Path | str,
    base_dir: Path | None = None,
    data_root: Path | None = None,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[BenchmarkConfig, SweepSpec]:
    """The base config and the ``sweep:`` section of a YAML or TOML file.

    The file is read as :func:`~retrieval_bench.config.load_config` reads a
    config; without its ``sweep:`` section it must be a valid benchmark config
    (relative paths resolve against ``base_dir``, by default the file's folder,
    in the grid's alternatives too). The base's ``metrics`` gain the objective's
    cut-off (:func:`with_objective`). A file without ``sweep:`` is a
    :class:`ConfigError`: ``rbench run`` is for plain configs. ``data_root`` is
    ``--data-root`` (:func:`~retrieval_bench.config.load_parsed`); ``edit`` changes the
    base's mapping before it is validated (the command line's overrides).
    """
    path = Path(path)
    data = read_mapping(path, "config file", "sweep config", "at the top level")
    raw = data.pop("sweep", None)
    if edit is not None:
        data = edit(data)
    if raw is None:
        raise ConfigError(f"{path} has no sweep: section; rbench run runs a plain config")
    folder = base_dir or path.resolve().parent
    grid = {"sweep": raw}  # the grid's alternatives may name the data root too
    expand_data_root(grid, folder, str(path), data_root)
    spec = parse_sweep(grid["sweep"], str(path))
    cfg = load_parsed(data, path, folder, data_root)
    return with_objective(cfg, spec.objective), resolve_grid_paths(spec, folder)

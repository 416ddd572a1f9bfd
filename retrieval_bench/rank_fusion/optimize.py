"""Fusion weights optimised on a labelled dev split (docs/stages.md#optimized).

Fusion weights come from config or are optimised on a labelled dev split.
The "better" ensemble rung (normalised sum) leaves its weights to the user;
this module picks them from data, as ranx's ``optimize_fusion``
does (Bassani, "ranx.fuse: A Python Library for Metasearch", CIKM 2022) —
with its own, deterministic search.

Search: coordinate ascent over a grid (default ``0, 0.25, 0.5, 1, 2, 4``).
It starts from equal weights (1.0 each, the *baseline*) and the base fusion's
default parameters. One sweep visits the sources in the order given and, for
each, tries every grid value in grid order with the other weights fixed,
keeping a value only when it raises the dev score by more than ``1e-12``;
then it does the same for each extra parameter in ``param_grid`` (e.g.
``k_rrf`` over ``10, 30, 60, 100`` for RRF, Cormack et al. 2009). It stops
after a sweep without improvement, or after ``max_sweeps``. All-zero weights
are never tried. The result therefore never scores below the baseline on the
dev data, and the same inputs always give the same result (earlier trials win
ties).

The score is one metric of :func:`~retrieval_bench.metrics.retrieval.evaluate_stage`
(``R@10``, ``nDCG@5``, ``MRR``, ``F1@8k``, ``chunk_R@10``, ``line_F1@8k`` ...),
averaged over the dev examples, of the fused run cut at ``k`` chunks.

:class:`OptimizedFusion` (registered as ``optimized``) wraps this as a fusion
rung: ``fit`` runs the search on a dev split, ``fuse`` delegates to the base
fusion (``rrf``, ``normsum`` or ``vote``) with the weights found.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import (
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from retrieval_bench.contracts.fusion import Fusion
from retrieval_bench.contracts.params import StageParams, params_error
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.measures import parse_measure
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.rank_fusion.learned import NOT_FITTED
from retrieval_bench.rank_fusion.normsum import NormSumFusion
from retrieval_bench.rank_fusion.rrf import RRFFusion
from retrieval_bench.rank_fusion.vote import VoteFusion
from retrieval_bench.types import Example, Run

DEFAULT_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
K_RRF_GRID: tuple[float, ...] = (10.0, 30.0, 60.0, 100.0)
BASES: dict[str, type[RRFFusion] | type[NormSumFusion] | type[VoteFusion]] = {
    "rrf": RRFFusion,
    "normsum": NormSumFusion,
    "vote": VoteFusion,
}
_TOL = 1e-12


class Trial(NamedTuple):
    """One evaluated configuration: ``weights`` (per run name), dev ``score``, extra ``params``."""

    weights: dict[str, float]
    score: float
    params: dict[str, Any]


@dataclass
class OptimizationResult:
    """Best weights found, their dev score, the equal-weights baseline and every trial."""

    weights: dict[str, float]
    score: float
    baseline_score: float
    trials: list[Trial] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    """Best values of the extra parameters searched (``{}`` = the base's defaults)."""
    metric: str = "R@10"

    @property
    def improvement(self) -> float:
        return self.score - self.baseline_score


def metric_cutoffs(metric: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ``ks`` and ``budgets`` :func:`evaluate_stage` needs to produce ``metric``.

    ``R@10`` → ``((10,), ())``; ``F1@8k`` → ``((1,), (8000,))``; ``MRR`` → ``((1,), ())``.
    """
    measure = parse_measure(metric, strict=True)
    return (measure.cutoff or 1,), (() if measure.budget is None else (measure.budget,))


def score_run(run: Run, examples: Sequence[Example], corpus: Corpus, metric: str) -> float:
    """Mean of ``metric`` over ``examples`` for ``run`` (a :class:`ConfigError` if not produced)."""
    if not parse_measure(metric, strict=True).higher_is_better:
        raise ConfigError(
            f"metric {metric!r} counts lost gold files; it is not a quality to maximise"
        )
    ks, budgets = metric_cutoffs(metric)
    if metric.startswith(("chunk_", "line_")) and not any(ex.gold_spans for ex in examples):
        raise ConfigError(f"metric {metric!r} needs examples with gold_spans; these have none")
    means = evaluate_stage(run, examples, corpus, ks=ks, budgets=budgets).means
    if metric not in means:
        raise ConfigError(f"unknown metric {metric!r}; choose one of: {', '.join(sorted(means))}")
    value = means[metric]
    if math.isnan(value):
        raise ConfigError(f"metric {metric!r} is undefined on these examples")
    return value


def _check_grid(grid: Sequence[float], what: str) -> list[float]:
    values = list(dict.fromkeys(float(v) for v in grid))
    if not values:
        raise ConfigError(f"{what} is empty")
    if any(v < 0 or math.isnan(v) for v in values):
        raise ConfigError(f"{what} values must be >= 0, got {list(grid)}")
    return values


def _grid_param(
    given: object, handler: ValidatorFunctionWrapHandler, what: str, empty_ok: bool
) -> Any:
    """``given`` read as a grid by ``handler``, then checked by :func:`_check_grid`
    (its messages show the values as given; an empty grid passes when ``empty_ok``);
    a ValueError, for ``Params``."""
    grid = handler(given)
    if grid or not empty_ok:
        try:
            _check_grid(given if isinstance(given, list | tuple) else grid, what)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    return grid


def optimize_weights(
    fusion_factory: Callable[..., Fusion],
    runs_by_source: Sequence[Run],
    examples: Sequence[Example],
    corpus: Corpus,
    metric: str = "R@10",
    grid: Sequence[float] = DEFAULT_GRID,
    *,
    k: int = 100,
    param_grid: Mapping[str, Sequence[Any]] | None = None,
    max_sweeps: int = 5,
) -> OptimizationResult:
    """Coordinate ascent of the per-source weights of a fusion (module doc).

    Args:
        fusion_factory: called as ``fusion_factory(weights={name: w}, **params)``
            (e.g. :class:`RRFFusion`, or a ``functools.partial`` fixing ``norm``).
        runs_by_source: the retrievers' runs over the dev queries (distinct names).
        examples: the labelled dev examples.
        corpus: maps chunk ids to files and spans for scoring.
        metric: an :func:`evaluate_stage` metric name, higher is better.
        grid: the candidate weights.
        k: chunks per query the fused run keeps (the pipeline's candidates count).
        param_grid: extra parameters searched as coordinates, e.g.
            ``{"k_rrf": K_RRF_GRID}`` for RRF.
        max_sweeps: the most sweeps over all coordinates.
    """
    names = [run.name for run in runs_by_source]
    if not names:
        raise ConfigError("optimize: needs at least one retriever run")
    if len(set(names)) != len(names):
        raise ConfigError(f"optimize: runs must have distinct names, got {names}")
    if not examples:
        raise ConfigError("optimize: the dev split has no examples")
    if max_sweeps < 1:
        raise ConfigError(f"optimize: max_sweeps must be >= 1, not {max_sweeps}")
    values = _check_grid(grid, "optimize: grid")
    extra = {p: list(dict.fromkeys(vs)) for p, vs in (param_grid or {}).items()}
    for p, vs in extra.items():
        if not vs:
            raise ConfigError(f"optimize: param_grid[{p!r}] is empty")

    cache: dict[tuple[Any, ...], float] = {}
    trials: list[Trial] = []

    def evaluate(weights: dict[str, float], params: dict[str, Any]) -> float:
        key = (tuple(weights[n] for n in names), tuple(sorted(params.items())))
        if key not in cache:
            fusion = fusion_factory(weights=dict(weights), **params)
            run = fusion.fuse(runs_by_source, k)
            cache[key] = score_run(run, examples, corpus, metric)
            trials.append(Trial(dict(weights), cache[key], dict(params)))
        return cache[key]

    weights = dict.fromkeys(names, 1.0)
    params: dict[str, Any] = {}
    baseline = best = evaluate(weights, params)
    for _ in range(max_sweeps):
        improved = False
        for name in names:
            for v in values:
                cand = {**weights, name: v}
                if v == weights[name] or not any(w > 0 for w in cand.values()):
                    continue
                score = evaluate(cand, params)
                if score > best + _TOL:
                    best, weights, improved = score, cand, True
        for p, vs in extra.items():
            for v in vs:
                if p in params and params[p] == v:
                    continue
                cand_params = {**params, p: v}
                score = evaluate(weights, cand_params)
                if score > best + _TOL:
                    best, params, improved = score, cand_params, True
        if not improved:
            break
    return OptimizationResult(
        weights=weights,
        score=best,
        baseline_score=baseline,
        trials=trials,
        params=params,
        metric=metric,
    )


class OptimizedFusion(Fusion):
    """A base fusion whose weights are optimised on a dev split by :meth:`fit`.

    Parameters:
        base: the fusion whose weights are tuned: "rrf" (default), "normsum" or "vote".
        metric: the dev metric to maximise (an :func:`evaluate_stage` name).
        grid: the candidate weights.
        k_rrf_grid: for ``base="rrf"``, also search ``k_rrf`` over these values
            (e.g. ``[10, 30, 60, 100]``); off by default.
        base_params: fixed parameters of the base fusion (``{"norm": "zscore"}``).
        fit_k: chunks per query the fused run keeps while fitting (set it to
            the pipeline's candidates count).
        max_sweeps: the most sweeps of the coordinate ascent.
        name: the name of the fused run.
    """

    trainable = True

    class Params(StageParams):
        base: str = "rrf"
        metric: str = "R@10"
        grid: tuple[float, ...] = DEFAULT_GRID
        k_rrf_grid: tuple[float, ...] | None = None
        base_params: dict[str, Any] | None = None
        fit_k: int = 100
        max_sweeps: int = 5

        @field_validator("base", mode="before")
        @classmethod
        def _known_base(cls, base: object) -> object:
            if not isinstance(base, str) or base not in BASES:
                raise ValueError(f"optimized: base {base!r} is not one of {', '.join(BASES)}")
            return base

        @field_validator("metric")
        @classmethod
        def _known_metric(cls, metric: str) -> str:
            try:
                metric_cutoffs(metric)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
            return metric

        @field_validator("grid", mode="wrap")
        @classmethod
        def _weights_grid(cls, grid: object, handler: ValidatorFunctionWrapHandler) -> Any:
            return _grid_param(grid, handler, "optimized: grid", empty_ok=False)

        @field_validator("k_rrf_grid", mode="wrap")
        @classmethod
        def _k_rrf_grid(
            cls, grid: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
        ) -> Any:
            base = info.data.get("base")
            if grid is not None and base is not None and base != "rrf":
                raise ValueError(f"optimized: k_rrf_grid applies to base 'rrf', not {base!r}")
            return _grid_param(grid, handler, "optimized: k_rrf_grid", empty_ok=True)

        @field_validator("base_params")
        @classmethod
        def _base_params(cls, given: dict[str, Any] | None, info: ValidationInfo) -> Any:
            params = dict(given or {})
            forbidden = sorted({"weights", "name"} & set(params))
            if forbidden:
                raise ValueError(f"optimized: base_params may not set {forbidden}")
            base = info.data.get("base")
            if base is None:
                return given
            base_params = BASES[base].Params
            try:  # a bad base param fails now, not after fit
                base_params.model_validate(params)
            except ValidationError as exc:
                why = params_error(base_params, exc)
                if any(e["type"] == "extra_forbidden" for e in exc.errors()):
                    why = f"optimized: bad base_params {sorted(params)} for {base!r}: {why}"
                raise ValueError(why) from None
            return given

    params: OptimizedFusion.Params

    def __init__(
        self,
        params: OptimizedFusion.Params | None = None,
        /,
        *,
        name: str = "optimized",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.base = p.base
        self.metric = p.metric
        self.base_params = dict(p.base_params or {})
        self.grid = tuple(_check_grid(p.grid, "optimized: grid"))
        self.k_rrf_grid = (
            tuple(_check_grid(p.k_rrf_grid, "optimized: k_rrf_grid")) if p.k_rrf_grid else None
        )
        self.fit_k = p.fit_k
        self.max_sweeps = p.max_sweeps
        self.best: OptimizationResult | None = None

    def _factory(self, **kwargs: Any) -> Fusion:
        return BASES[self.base](name=self.name, **{**self.base_params, **kwargs})

    def fit(
        self,
        runs: Sequence[Run],
        examples: Sequence[Example],
        corpus: Corpus,
        k: int | None = None,
    ) -> None:
        """Search the weights on the dev ``runs``/``examples``; keep the best in :attr:`best`."""
        self.best = optimize_weights(
            self._factory,
            runs,
            examples,
            corpus,
            metric=self.metric,
            grid=self.grid,
            k=k if k is not None else self.fit_k,
            param_grid={"k_rrf": self.k_rrf_grid} if self.k_rrf_grid else None,
            max_sweeps=self.max_sweeps,
        )

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """The base fusion of ``runs`` with the fitted weights, top ``k`` per query."""
        if self.best is None:
            raise ConfigError(NOT_FITTED)
        present = {run.name for run in runs}
        missing = sorted(set(self.best.weights) - present)
        new = sorted(present - set(self.best.weights))
        if missing:
            warnings.warn(
                f"optimized: sources {missing} were tuned but are missing now; "
                "the others keep their tuned weights (re-fit on the current retrievers)",
                stacklevel=2,
            )
        if new:
            warnings.warn(f"optimized: sources {new} were not tuned; they weigh 1.0", stacklevel=2)
        weights = {n: w for n, w in self.best.weights.items() if n in present}
        return self._factory(weights=weights, **self.best.params).fuse(runs, k)

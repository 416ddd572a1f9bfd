"""Paired tests in the per-stage table (docs/metrics.md#paired-columns-of-the-per-stage-table).

Two checks, both on the queries of the table they are shown with (a subset of
``rbench run``, a split of ``benchmarks/studies/split_table.py``):

* **against the baseline**: every stage's per-query values of one metric are
  paired with the baseline stage's (config ``baseline: {stage, metric}``;
  defaults in :func:`resolve_baseline`): the mean difference (stage − baseline)
  and the two-sided paired randomisation test of
  :func:`retrieval_bench.metrics.stats.randomisation_test` (10,000 resamples,
  seed 0), Holm-adjusted over the table's other stages. As in ``rbench
  compare``, a stage whose values equal the baseline's on every pair is not a
  test: it stays out of the Holm family, with p 1.
* **the fusion guard**: each fusion is paired with its best input, the input
  retriever (non-zero ``weights`` entry; :func:`fusion_inputs`) with the best
  mean of the metric in the table; a fusion significantly worse than it (the
  same test, unadjusted p < :data:`ALPHA`, in the worse direction) is flagged.

A pair is a query both stages have a finite value of the metric for and
neither failed on (per-query ``failed`` = 1); so ``n`` can be below the
table's query count. Pairs are taken in query-id order.

The results are stored with the per-stage table itself, as extra entries of
each stage's row (reserved names, :func:`encode`; :func:`decode` reads them
back), so ``run.json``, the results database, ``rbench show`` and the web UI
carry them without a schema of their own:

* ``vs:<baseline>:<metric>:{delta,p,p_holm,n,queries}`` on every stage's row
  (on the baseline's own row only ``n`` and ``queries``);
* ``guard:<input>:<metric>:{delta,p,n,queries,fusion_mean,input_mean,worse}``
  on a fusion's row (``worse`` is 1 or 0).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from retrieval_bench.baseline_spec import STAGE_LEVEL_METRICS
from retrieval_bench.harness.compare.comparison import higher_is_better
from retrieval_bench.store.stored_config import StoredConfig, stage_label

ALPHA = 0.05
"""The fusion guard's significance level."""
N_RESAMPLES = 10000
SEED = 0
VS, GUARD = "vs", "guard"

PerQuery = Mapping[str, Mapping[str, Mapping[str, float]]]
"""stage → query id → metric → value."""


@dataclass(frozen=True)
class StageTest:
    """One stage against the baseline (for the baseline itself: its counts only)."""

    delta: float | None
    """Mean of stage − baseline over the pairs (None without pairs)."""
    p_value: float | None
    """Two-sided randomisation p (None with fewer than 2 pairs)."""
    p_holm: float | None
    n: int
    """Pairs used."""
    queries: int
    """Queries of the table either stage has a row for."""


@dataclass(frozen=True)
class GuardTest:
    """A fusion against its best input."""

    best_input: str
    fusion_mean: float | None
    input_mean: float | None
    """Means over the pairs (None without pairs)."""
    delta: float | None
    p_value: float | None
    n: int
    queries: int
    worse: bool
    """Significantly worse than the input: p < :data:`ALPHA` in the worse direction."""


@dataclass
class PairedView:
    """The paired results of one table."""

    baseline: str
    metric: str
    tests: dict[str, StageTest] = field(default_factory=dict)
    """Stage → its test against the baseline (the baseline's row included)."""
    guards: dict[str, GuardTest] = field(default_factory=dict)
    """Fusion → its guard."""

    @property
    def header(self) -> str:
        """The delta column's header, e.g. ``ΔAcc@5 vs bm25``."""
        return f"Δ{self.metric} vs {self.baseline}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: baseline, metric, tests and guards by stage."""
        return {
            "baseline": self.baseline,
            "metric": self.metric,
            "tests": {s: asdict(t) for s, t in self.tests.items()},
            "guards": {s: asdict(g) for s, g in self.guards.items()},
        }


def resolve_baseline(
    config: StoredConfig | Mapping[str, Any], stage: str | None = None, metric: str | None = None
) -> tuple[str, str]:
    """(baseline stage, metric) of a config (as JSON data, :class:`StoredConfig`):
    ``stage``/``metric`` if given, else the config's ``baseline:`` entries, else the
    first retriever and the first per-query metric of ``table_columns``, else
    ``R@<table_k>``."""
    stored = StoredConfig.of(config)
    spec = stored.baseline
    stage = stage or spec.get("stage") or stored.retriever_labels[0]
    columns = [c for c in stored.table_columns if c not in STAGE_LEVEL_METRICS]
    chosen = metric or spec.get("metric") or (columns[0] if columns else None)
    return stage, chosen or f"R@{stored.table_k}"


def fusion_inputs(config: StoredConfig | Mapping[str, Any]) -> dict[str, list[str]]:
    """Fusion label → the retriever labels it fuses: every retriever but those its
    ``weights`` give weight 0 (a retriever the weights do not name weighs 1); for a
    fusion with a ``model_file`` (``ltr``), the model's ``sources``."""
    stored = StoredConfig.of(config)
    retrievers = stored.retriever_labels
    out: dict[str, list[str]] = {}
    for spec in stored.fusions:
        sources = _model_sources(spec.get("model_file"))
        if sources is not None:
            out[stage_label(spec)] = [r for r in retrievers if r in sources]
            continue
        weights = spec.get("weights")
        weights = weights if isinstance(weights, Mapping) else {}
        out[stage_label(spec)] = [r for r in retrievers if float(weights.get(r, 1.0)) != 0.0]
    return out


def _model_sources(model_file: object) -> set[str] | None:
    """The ``sources`` a fusion's model file names, or None (no file, unreadable)."""
    if not isinstance(model_file, str):
        return None
    try:
        data = json.loads(Path(model_file).read_text(encoding="utf-8"))
        return {str(s) for s in data["sources"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _value(row: Mapping[str, float] | None, metric: str) -> float | None:
    """The query's value of ``metric``; None when absent, not finite or the stage failed."""
    if row is None or row.get("failed", 0.0) == 1.0:
        return None
    value = row.get(metric)
    return None if value is None or not math.isfinite(value) else float(value)


def paired_values(
    base: Mapping[str, Mapping[str, float]],
    other: Mapping[str, Mapping[str, float]],
    metric: str,
    members: Collection[str] | None = None,
) -> tuple[list[float], list[float], int]:
    """(base values, other values, queries): the pairs of ``metric`` in query-id order
    over the queries in ``members`` (None: all) either side has a row for."""
    ids = sorted(q for q in set(base) | set(other) if members is None or q in members)
    a: list[float] = []
    b: list[float] = []
    for q in ids:
        x, y = _value(base.get(q), metric), _value(other.get(q), metric)
        if x is not None and y is not None:
            a.append(x)
            b.append(y)
    return a, b, len(ids)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _test(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided paired randomisation p of ``b`` against ``a`` (None with < 2 pairs)."""
    if len(a) < 2:
        return None
    from retrieval_bench.metrics.stats import randomisation_test

    return randomisation_test(a, b, n_resamples=N_RESAMPLES, seed=SEED).p_value


def _table_mean(
    rows: Mapping[str, Mapping[str, float]], metric: str, members: Collection[str] | None
) -> float | None:
    """The stage's mean of ``metric`` as the table shows it (failed queries included)."""
    values = [
        v
        for q, row in rows.items()
        if (members is None or q in members)
        and (v := row.get(metric)) is not None
        and math.isfinite(v)
    ]
    return _mean(values)


def paired_view(
    per_query: PerQuery,
    stages: Sequence[str],
    baseline: str,
    metric: str,
    inputs: Mapping[str, Sequence[str]],
    members: Collection[str] | None = None,
) -> PairedView | None:
    """The baseline tests and fusion guards of a table of ``stages`` over ``members``;
    None when the baseline is not among them or has no value of ``metric``."""
    from retrieval_bench.metrics.stats import holm

    base = per_query.get(baseline, {})
    if baseline not in stages or _table_mean(base, metric, members) is None:
        return None
    view = PairedView(baseline, metric)
    _, usable, total = paired_values(base, base, metric, members)
    view.tests[baseline] = StageTest(None, None, None, len(usable), total)
    tested: dict[str, float] = {}
    for stage in stages:
        if stage == baseline:
            continue
        a, b, total = paired_values(base, per_query.get(stage, {}), metric, members)
        p = _test(a, b)
        delta = _mean([y - x for x, y in zip(a, b, strict=True)])
        if p is not None and a != b:  # identical values: not a test (as rbench compare)
            tested[stage] = p
        view.tests[stage] = StageTest(delta, p, None if p is None else 1.0, len(a), total)
    for stage, p_holm in zip(tested, holm(list(tested.values())), strict=True):
        view.tests[stage] = replace(view.tests[stage], p_holm=p_holm)
    for fusion, names in inputs.items():
        if fusion in stages:
            guard = _guard(per_query, fusion, [n for n in names if n in stages], metric, members)
            if guard is not None:
                view.guards[fusion] = guard
    return view


def _guard(
    per_query: PerQuery,
    fusion: str,
    names: Sequence[str],
    metric: str,
    members: Collection[str] | None,
) -> GuardTest | None:
    """``fusion`` against the input with the best table mean (ties: the first named)."""
    higher = higher_is_better(metric)
    means: dict[str, float] = {}
    for name in names:
        mean = _table_mean(per_query.get(name, {}), metric, members)
        if mean is not None:
            means[name] = mean
    if not means:
        return None
    best = (max if higher else min)(means, key=lambda n: means[n])
    a, b, total = paired_values(per_query.get(best, {}), per_query.get(fusion, {}), metric, members)
    delta = _mean([y - x for x, y in zip(a, b, strict=True)])
    p = _test(a, b)
    worse_way = delta is not None and (delta < 0 if higher else delta > 0)
    worse = p is not None and p < ALPHA and worse_way
    return GuardTest(best, _mean(b), _mean(a), delta, p, len(a), total, worse)


def encode(view: PairedView) -> dict[str, dict[str, float]]:
    """Stage → the reserved table entries that store ``view`` (module docstring)."""
    out: dict[str, dict[str, float]] = {}
    for stage, t in view.tests.items():
        fields: dict[str, float | None] = {"n": t.n, "queries": t.queries}
        if stage != view.baseline:
            fields.update(delta=t.delta, p=t.p_value, p_holm=t.p_holm)
        prefix = f"{VS}:{view.baseline}:{view.metric}:"
        out[stage] = {prefix + k: float(v) for k, v in fields.items() if v is not None}
    for fusion, g in view.guards.items():
        prefix = f"{GUARD}:{g.best_input}:{view.metric}:"
        values = {"delta": g.delta, "p": g.p_value, "n": g.n, "queries": g.queries,
                  "fusion_mean": g.fusion_mean, "input_mean": g.input_mean,
                  "worse": float(g.worse)}  # fmt: skip
        out.setdefault(fusion, {}).update(
            {prefix + k: float(v) for k, v in values.items() if v is not None}
        )
    return out


def _split(key: str) -> tuple[str, str, str, str] | None:
    """(kind, other stage, metric, field) of a reserved key; stage labels may hold ``:``."""
    kind, _, rest = key.partition(":")
    parts = rest.rsplit(":", 2)
    if kind not in (VS, GUARD) or len(parts) != 3:
        return None
    return kind, parts[0], parts[1], parts[2]


def without_paired(table: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``table`` (stage → entry → value) without the reserved entries of :func:`encode`."""
    return {s: {k: v for k, v in row.items() if _split(k) is None} for s, row in table.items()}


def _num(row: Mapping[str, float], key: str) -> float | None:
    value = row.get(key)
    return None if value is None or math.isnan(value) else float(value)


def decode(table: Mapping[str, Mapping[str, float]]) -> PairedView | None:
    """The :class:`PairedView` stored in a stage table (``stage → entry → value``);
    None for a table without one (a run made before these columns existed)."""
    found = next(
        (p for row in table.values() for k in row if (p := _split(k)) and p[0] == VS), None
    )
    if found is None:
        return None
    view = PairedView(baseline=found[1], metric=found[2])
    vs = f"{VS}:{view.baseline}:{view.metric}:"
    for stage, row in table.items():
        if vs + "n" in row:
            view.tests[stage] = StageTest(
                _num(row, vs + "delta"), _num(row, vs + "p"), _num(row, vs + "p_holm"),
                int(row[vs + "n"]), int(_num(row, vs + "queries") or 0),
            )  # fmt: skip
        guard = next(
            (p for k in row if (p := _split(k)) and p[0] == GUARD and p[2] == view.metric), None
        )
        if guard is not None:
            g = f"{GUARD}:{guard[1]}:{view.metric}:"
            view.guards[stage] = GuardTest(
                guard[1], _num(row, g + "fusion_mean"), _num(row, g + "input_mean"),
                _num(row, g + "delta"), _num(row, g + "p"), int(_num(row, g + "n") or 0),
                int(_num(row, g + "queries") or 0), _num(row, g + "worse") == 1.0,
            )  # fmt: skip
    return view

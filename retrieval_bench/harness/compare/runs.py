"""Compare stored runs query by query, with paired significance tests
(docs/metrics.md#statistics).

Every candidate is compared with one baseline on the per-query metrics of the
results database. Queries are paired by query id (inner join); a metric value
that is NaN or absent on either side drops that pair for that metric, and both
counts are reported. For each (candidate, stage pair, metric) a row holds the
two means, the delta (candidate − baseline), a paired-bootstrap confidence
interval of the mean delta, the p-value of the chosen paired test plus those of
all four tests (paired t, Wilcoxon signed-rank, randomisation, paired
bootstrap; :mod:`retrieval_bench.metrics.stats`), Cohen's d_z, and the
direction of the change.

Pairing of targets (``RUN`` or ``RUN:STAGE``):

- ``RUN`` vs ``RUN``: every stage both runs have (or those named by ``stages``);
- ``RUN:S1`` vs ``RUN:S2``: those two stages directly (e.g. bm25 of one run
  against rrf of another, or two stages of the same run);
- ``RUN:S`` vs ``RUN``: stage S of both runs.

Ids pair only questions of the same data: runs whose dataset fingerprints differ
are refused unless allowed (:mod:`retrieval_bench.harness.compare.sides`), and
the stages a ``RUN`` vs ``RUN`` pairing leaves out are listed (``stage_gaps``).

Multiple comparisons: the Holm–Bonferroni step-down correction (Holm 1979,
"A simple sequentially rejective multiple test procedure", Scand. J. Statist.
6:65–70) is applied within each metric's family, i.e. over all rows of the
same metric across candidate runs and stages; different metrics are separate
families (they answer different questions and are strongly correlated). Rows
whose per-query values are identical on both sides (the same stage config in
both runs) are not tests and stay out of the family, with p_holm = 1.
A row is significant when its Holm-adjusted p-value is below ``alpha``.

Subsets (``all``, ``dataset=NAME``, ``KEY=true|false``) are recovered by
:mod:`retrieval_bench.harness.run.subsets`. The result types (:class:`Comparison`,
its rows) are :mod:`retrieval_bench.harness.compare.comparison`, re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.compare.comparison import (
    TESTS,
    Comparison,
    ComparisonRow,
    PairInfo,
    StageGap,
    higher_is_better,
)
from retrieval_bench.harness.compare.defaults import DEFAULT_RESAMPLES
from retrieval_bench.harness.compare.sides import check_same_data, run_side
from retrieval_bench.harness.run.subsets import subset_members
from retrieval_bench.metrics import stats
from retrieval_bench.store.db import ResultsDB, UnknownRunError
from retrieval_bench.store.stored_config import StoredConfig

__all__ = [
    "DEFAULT_RESAMPLES",
    "TESTS",
    "Comparison",
    "ComparisonRow",
    "PairInfo",
    "Target",
    "compare_runs",
    "gate",
    "higher_is_better",
    "parse_target",
]


@dataclass(frozen=True)
class Target:
    """A run, or one stage of a run."""

    run_id: str
    stage: str | None = None

    @property
    def label(self) -> str:
        return self.run_id if self.stage is None else f"{self.run_id}:{self.stage}"


def parse_target(db: ResultsDB, text: str) -> Target:
    """``RUN`` or ``RUN:STAGE`` (a stored run id that contains ``:`` is taken whole)."""
    run_id, _, stage = text.partition(":")
    if stage:
        try:
            db.get_run(text)
        except UnknownRunError:
            db.get_run(run_id)  # UnknownRunError when absent
            return Target(run_id, stage)
    db.get_run(text)
    return Target(text)


def _default_metrics(config: Mapping[str, Any]) -> list[str]:
    """R/nDCG/MRR/F1/P/Acc at a benchmark run's ``table_k``; none for an eval run."""
    stored = StoredConfig.of(config)
    if stored.is_eval:
        return []
    k = stored.table_k
    return [f"R@{k}", f"nDCG@{k}", "MRR", f"F1@{k}", f"P@{k}", f"Acc@{k}"]


@dataclass
class _Pair:
    """A baseline stage and a candidate stage, restricted to their paired queries."""

    info: PairInfo
    ids: list[str]
    baseline_rows: dict[str, dict[str, float]]
    candidate_rows: dict[str, dict[str, float]]
    metrics: list[str]
    """Stored on both sides, in the order of the baseline's stage table."""

    def values(self, metric: str) -> tuple[list[float], list[float]]:
        """Paired values of ``metric``, without pairs where either side is NaN/absent."""
        a: list[float] = []
        b: list[float] = []
        for q in self.ids:
            x = self.baseline_rows[q].get(metric, math.nan)
            y = self.candidate_rows[q].get(metric, math.nan)
            if not (math.isnan(x) or math.isnan(y)):
                a.append(x)
                b.append(y)
        return a, b


def _stage_pairs(
    db: ResultsDB,
    base: Target,
    cand: Target,
    stages: Sequence[str] | None,
    gaps: list[StageGap] | None = None,
) -> list[tuple[str, str]]:
    """(baseline stage, candidate stage) pairs to compare; see the module docstring.
    ``RUN`` vs ``RUN`` adds the stages only one side has to ``gaps``."""
    have = {t.run_id: [s.stage for s in db.stages(t.run_id)] for t in (base, cand)}
    if base.stage is not None or cand.stage is not None:
        pair = (base.stage or cand.stage or "", cand.stage or base.stage or "")
        for t, s in zip((base, cand), pair, strict=True):
            if s not in have[t.run_id]:
                raise ConfigError(
                    f"run {t.run_id} has no stage {s!r}; its stages: "
                    f"{', '.join(have[t.run_id]) or 'none'}"
                )
        return [pair]
    common = [s for s in have[base.run_id] if s in have[cand.run_id]]
    only_base = [s for s in have[base.run_id] if s not in common]
    only_cand = [s for s in have[cand.run_id] if s not in common]
    if gaps is not None and (only_base or only_cand):
        gaps.append(StageGap(cand.run_id, only_base, only_cand))
    for s in stages or ():
        if s not in common:
            raise ConfigError(
                f"stage {s!r} is not in both runs {base.run_id} and {cand.run_id}; "
                f"stages in both: {', '.join(common) or 'none'}"
            )
    common = [s for s in common if not stages or s in stages]
    if not common:
        raise ConfigError(
            f"runs {base.run_id} and {cand.run_id} share no stage; compare stages "
            "directly with RUN:STAGE (e.g. RUN1:bm25 RUN2:rrf)"
        )
    return [(s, s) for s in common]


def _all_p_values(a: list[float], b: list[float], n_resamples: int, seed: int) -> dict[str, float]:
    return {
        "randomisation": stats.randomisation_test(a, b, n_resamples=n_resamples, seed=seed).p_value,
        "t": stats.paired_t_test(a, b).p_value,
        "wilcoxon": stats.wilcoxon_signed_rank(a, b).p_value,
        "bootstrap": stats.paired_bootstrap_test(a, b, n_resamples=n_resamples, seed=seed).p_value,
    }


def _direction(delta: float, higher_better: bool) -> str:
    if delta == 0:
        return "same"
    return "better" if (delta > 0) == higher_better else "worse"


def _split_targets(
    db: ResultsDB, targets: Sequence[str], baseline: str | None
) -> tuple[Target, list[Target]]:
    """(baseline, candidates); a bare baseline run listed as RUN:STAGE means that stage."""
    candidates = [parse_target(db, t) for t in targets]
    if baseline is None:
        if len(candidates) < 2:
            raise ConfigError("compare needs at least two runs (or RUN:STAGE targets)")
        base = candidates.pop(0)
    else:
        base = parse_target(db, baseline)
        same = [t for t in candidates if t.run_id == base.run_id and base.stage in (None, t.stage)]
        if same:
            base = same[0]
            candidates.remove(base)
    candidates = list(dict.fromkeys(candidates))
    if not candidates:
        raise ConfigError(f"nothing to compare with baseline {base.label}; list another run")
    return base, candidates


def _pair(
    db: ResultsDB,
    base: Target,
    cand: Target,
    stage_pair: tuple[str, str],
    members: Sequence[set[str] | None],
    subset: str,
) -> _Pair:
    b_stage, c_stage = stage_pair
    b_rows = db.query_metrics(base.run_id, b_stage)
    c_rows = db.query_metrics(cand.run_id, c_stage)
    b_ids, c_ids = set(b_rows), set(c_rows)
    for m in members:
        if m is not None:
            b_ids, c_ids = b_ids & m, c_ids & m
    ids = sorted(b_ids & c_ids)
    if len(ids) < 2:
        raise ConfigError(
            f"{base.run_id}:{b_stage} and {cand.run_id}:{c_stage} share {len(ids)} "
            f"quer{'y' if len(ids) == 1 else 'ies'} in subset {subset}; "
            "a paired test needs at least 2"
        )
    info = PairInfo(cand.run_id, b_stage, c_stage, len(ids), len(b_ids - c_ids), len(c_ids - b_ids))
    both = {m for q in ids for m in b_rows[q]} & {m for q in ids for m in c_rows[q]}
    stored = [m for m in db.stage_table(base.run_id).get(b_stage, {}) if m in both]
    metrics = stored + sorted(both - set(stored))  # the order the run recorded them
    return _Pair(info, ids, b_rows, c_rows, metrics)


def compare_runs(
    db: ResultsDB,
    targets: Sequence[str],
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    extra_metrics: Sequence[str] = (),
    stages: Sequence[str] | None = None,
    subset: str = "all",
    test: str = "randomisation",
    alpha: float = 0.05,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    results_dir: Path | None = None,
    allow_different_data: bool = False,
) -> Comparison:
    """Compare each candidate target with the baseline (default: the first target).

    ``targets`` are ``RUN`` or ``RUN:STAGE``. A ``baseline`` among the targets
    is taken out of them once (listing a run twice compares it with itself);
    otherwise every target is a candidate. ``metrics`` default to
    R/nDCG/MRR/F1/P/Acc at the baseline's ``table_k`` where stored, else every
    metric stored (e.g. the ``answer`` stage of eval runs); ``extra_metrics``
    (the gate's) are added. ``stages`` filters the stages of ``RUN`` vs
    ``RUN`` pairs. ``results_dir`` (default: ``results/`` beside the
    database) is read for ``dataset=NAME`` subsets. Runs on different data (their
    dataset fingerprints differ) raise ``DifferentDataError`` unless
    ``allow_different_data``, which records a warning in ``data_warnings`` instead
    (:mod:`retrieval_bench.harness.compare.sides`).
    """
    if test not in TESTS:
        raise ConfigError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha}")
    if n_resamples < 1:
        raise ConfigError(f"resamples must be a positive integer, got {n_resamples}")
    base, candidates = _split_targets(db, targets, baseline)
    results = results_dir or Path(db.path).resolve().parent / "results"
    base_members = subset_members(db, base.run_id, subset, results)
    comp = Comparison(
        base.run_id,
        list(dict.fromkeys(c.run_id for c in candidates)),
        test, alpha, n_resamples, seed, subset, metrics=[],
    )  # fmt: skip
    for rid in dict.fromkeys([base.run_id, *comp.candidates]):
        run = db.get_run(rid)
        comp.run_names[rid] = run.name
        comp.sides[rid] = run_side(run)
        if run.status != "done":
            comp.warnings.append(f"run {rid} is {run.status}, not done")
    for rid in comp.candidates:  # before any pairing: ids of different data do not pair
        side = comp.sides[base.run_id]
        warning = check_same_data(side, comp.sides[rid], subset, allow_different_data, results)
        comp.data_warnings += [warning] if warning else []

    pairs: list[_Pair] = []
    for cand in candidates:
        members = (base_members, subset_members(db, cand.run_id, subset, results))
        for stage_pair in _stage_pairs(db, base, cand, stages, comp.stage_gaps):
            pair = _pair(db, base, cand, stage_pair, members, subset)
            info = pair.info
            if info.n_baseline_only or info.n_candidate_only:
                comp.warnings.append(
                    f"{base.run_id}:{info.baseline_stage} vs {cand.run_id}:{info.candidate_stage}"
                    f": {info.n_baseline_only} queries only in the baseline, "
                    f"{info.n_candidate_only} only in the candidate (left out)"
                )
            comp.pairs.append(info)
            pairs.append(pair)

    available = list(dict.fromkeys(m for pair in pairs for m in pair.metrics))
    defaults = [m for m in _default_metrics(db.get_run(base.run_id).config) if m in available]
    chosen = list(dict.fromkeys([*(metrics or defaults or available), *extra_metrics]))
    for m in chosen:
        if m not in available:
            raise ConfigError(
                f"metric {m!r} is not stored for the compared stages; "
                f"available: {', '.join(available) or 'none'}"
            )
    comp.metrics = chosen
    for metric in chosen:
        family = [row for pair in pairs if (row := _row(pair, metric, comp)) is not None]
        if not family:
            raise ConfigError(
                f"metric {metric!r} has fewer than 2 paired non-missing values in every "
                "compared stage pair; a paired test needs at least 2"
            )
        # rows whose per-query values are identical (every difference 0: the same
        # stage config in both runs) carry no test; they stay out of the family so
        # they cannot inflate the others' adjusted p-values
        tested = [r for r in family if not r.identical]
        adjusted = dict(zip(map(id, tested), stats.holm([r.p_value for r in tested]), strict=True))
        comp.rows += [
            replace(r, p_holm=(p := adjusted.get(id(r), 1.0)), significant=p < alpha)
            for r in family
        ]
    return comp


def _row(pair: _Pair, metric: str, comp: Comparison) -> ComparisonRow | None:
    """One row before the Holm correction; ``None`` (with a warning) when < 2 pairs remain."""
    info = pair.info
    if metric not in pair.metrics:
        return None
    a, b = pair.values(metric)
    if len(a) < 2:
        comp.warnings.append(
            f"{metric} of {comp.baseline}:{info.baseline_stage} vs "
            f"{info.candidate}:{info.candidate_stage}: only {len(a)} paired non-missing "
            "value(s); row left out"
        )
        return None
    p_values = _all_p_values(a, b, comp.n_resamples, comp.seed)
    ci = stats.paired_bootstrap_ci(
        a, b, confidence=comp.confidence, n_resamples=comp.n_resamples, seed=comp.seed
    )
    delta = math.fsum(y - x for x, y in zip(a, b, strict=True)) / len(a)
    higher = higher_is_better(metric)
    return ComparisonRow(
        candidate=info.candidate,
        baseline_stage=info.baseline_stage,
        candidate_stage=info.candidate_stage,
        metric=metric,
        baseline_mean=math.fsum(a) / len(a),
        candidate_mean=math.fsum(b) / len(b),
        delta=delta,
        ci_low=ci.low,
        ci_high=ci.high,
        p_value=p_values[comp.test],
        p_holm=math.nan,
        significant=False,
        effect_size=stats.cohens_dz(a, b),
        n_pairs=len(a),
        n_unpaired=info.n_baseline_only + info.n_candidate_only,
        n_dropped=info.n_paired - len(a),
        higher_is_better=higher,
        direction=_direction(delta, higher),
        p_values=p_values,
        identical=all(x == y for x, y in zip(a, b, strict=True)),
    )


def gate(comparison: Comparison, metrics: Sequence[str] | None = None) -> list[ComparisonRow]:
    """Rows significantly worse than the baseline on ``metrics`` (default: the first compared).

    Significance is the Holm-adjusted p-value below the comparison's alpha.
    """
    chosen = list(metrics) if metrics else comparison.metrics[:1]
    for m in chosen:
        if m not in comparison.metrics:
            raise ConfigError(
                f"gate metric {m!r} was not compared; compared: {', '.join(comparison.metrics)}"
            )
    return [
        r
        for r in comparison.rows
        if r.metric in chosen and r.significant and r.direction == "worse"
    ]

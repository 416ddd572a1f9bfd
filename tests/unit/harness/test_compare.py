"""Run comparison: pairing, deltas, Holm families, direction, gate, subsets, bad input.

Hand-made runs in a temporary results database; expected means, deltas, d_z
and Holm adjustments are computed by hand (or by scipy, as the reference for
the t and Wilcoxon p-values).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, main
from retrieval_bench.datasets.jsonl import dataset_fingerprint, load_examples
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.compare.runs import (
    Comparison,
    compare_runs,
    gate,
    higher_is_better,
    parse_target,
)
from retrieval_bench.store.db import ResultsDB, UnknownRunError

Rows = Mapping[str, Mapping[str, float]]
QIDS = [f"q{i}" for i in range(1, 9)]
BASE_R = [1.0, 1.0, 0.5, 0.0, 1.0, 0.5, 1.0, 0.0]  # mean 0.625
CAND_R = [1.0, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0, 0.5]  # mean 0.8125
BASE_LOST = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
CAND_LOST = [1.0, 1.0, 1.0, 0.0, 2.0, 1.0, 1.0, 1.0]  # delta +6/8: worse


def rows(**metrics: list[float]) -> dict[str, dict[str, float]]:
    n = len(next(iter(metrics.values())))
    return {f"q{i + 1}": {m: v[i] for m, v in metrics.items()} for i in range(n)}


def add_run(
    db: ResultsDB,
    run_id: str,
    stages: Mapping[str, Rows],
    config: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    subsets: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    db.start_run(f"name-{run_id}", config or {"table_k": 5}, provenance, run_id=run_id)
    for stage, per_query in stages.items():
        means = {m: 0.0 for m in next(iter(per_query.values()))}  # fixes the metric order
        db.record_stage(run_id, stage, {"all": means, **(subsets or {})})
        db.record_query_metrics(run_id, stage, per_query)
    db.finish_run(run_id)
    return run_id


@pytest.fixture
def db(tmp_path: Path) -> ResultsDB:
    store = ResultsDB(tmp_path / "rbench.sqlite")
    base = rows(**{"R@5": BASE_R, "MRR": BASE_R, "lost": BASE_LOST, "P@5": BASE_R})
    cand = rows(**{"R@5": CAND_R, "MRR": CAND_R, "lost": CAND_LOST, "P@5": CAND_R})
    add_run(store, "base", {"bm25": base, "rrf": cand})
    add_run(store, "cand", {"bm25": cand, "rrf": base})
    return store


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def only(comp: Comparison, metric: str, stage: str | None = None) -> Any:
    found = [r for r in comp.rows_for(metric) if stage is None or r.stage == stage]
    assert len(found) == 1, found
    return found[0]


# ----------------------------------------------------------- values, pairing
def test_deltas_means_effect_size_and_reference_p_values(db: ResultsDB) -> None:
    from scipy import stats as scipy_stats

    comp = compare_runs(db, ["base", "cand"], n_resamples=2000)
    assert comp.baseline == "base" and comp.candidates == ["cand"]
    assert comp.metrics == ["R@5", "MRR", "P@5"]  # table_k 5 defaults that are stored
    row = only(comp, "R@5", "bm25")
    assert row.baseline_mean == pytest.approx(0.625)
    assert row.candidate_mean == pytest.approx(0.8125)
    assert row.delta == pytest.approx(0.1875)
    diffs = [c - b for b, c in zip(BASE_R, CAND_R, strict=True)]
    assert row.effect_size == pytest.approx(0.1875 / statistics.stdev(diffs))
    assert row.n_pairs == 8 and row.n_unpaired == 0 and row.n_dropped == 0
    assert row.direction == "better" and row.higher_is_better
    assert row.ci_low <= row.delta <= row.ci_high
    assert set(row.p_values) == {"randomisation", "t", "wilcoxon", "bootstrap"}
    assert row.p_value == row.p_values["randomisation"]
    assert row.p_values["t"] == pytest.approx(scipy_stats.ttest_rel(CAND_R, BASE_R).pvalue)
    assert row.p_values["wilcoxon"] == pytest.approx(scipy_stats.wilcoxon(diffs).pvalue)
    # rrf of base holds cand's values and vice versa: the mirror image
    mirror = only(comp, "R@5", "rrf")
    assert mirror.delta == pytest.approx(-0.1875) and mirror.direction == "worse"
    assert mirror.effect_size == pytest.approx(-row.effect_size)


def test_lower_is_better_metrics_read_the_delta_the_other_way(db: ResultsDB) -> None:
    assert not higher_is_better("lost") and not higher_is_better("Lost@5")
    assert not higher_is_better("seconds") and higher_is_better("nDCG@10")
    comp = compare_runs(db, ["base", "cand"], metrics=["lost"], stages=["bm25"], n_resamples=500)
    row = only(comp, "lost")
    assert row.delta == pytest.approx(6 / 8) and not row.higher_is_better
    assert row.direction == "worse"


def test_stage_targets_pair_stages_directly(db: ResultsDB) -> None:
    comp = compare_runs(db, ["base:bm25", "cand:rrf"], metrics=["R@5"], n_resamples=200)
    row = only(comp, "R@5")
    assert (row.baseline_stage, row.candidate_stage, row.stage) == ("bm25", "rrf", "bm25→rrf")
    assert row.delta == 0.0 and row.direction == "same"  # both hold BASE_R
    assert row.p_values == {"randomisation": 1.0, "t": 1.0, "wilcoxon": 1.0, "bootstrap": 1.0}
    # two stages of one run
    row = only(compare_runs(db, ["base:bm25", "base:rrf"], metrics=["R@5"], n_resamples=200), "R@5")
    assert row.candidate == "base" and row.delta == pytest.approx(0.1875)
    # RUN:STAGE against a bare RUN means the same stage of both
    comp = compare_runs(db, ["base:rrf", "cand"], metrics=["R@5"], n_resamples=200)
    assert only(comp, "R@5").stage == "rrf"


def test_unpaired_queries_and_nan_values_are_counted_and_left_out(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    base = rows(**{"R@5": BASE_R})
    cand = rows(**{"R@5": CAND_R})
    del cand["q1"]  # only in the baseline
    cand["q9"] = {"R@5": 1.0}  # only in the candidate
    cand["q3"]["R@5"] = math.nan  # stored as NULL, read back as NaN
    add_run(db, "a", {"bm25": base})
    add_run(db, "b", {"bm25": cand})
    comp = compare_runs(db, ["a", "b"], n_resamples=200)
    row = only(comp, "R@5")
    assert comp.pairs[0].n_paired == 7
    assert (comp.pairs[0].n_baseline_only, comp.pairs[0].n_candidate_only) == (1, 1)
    assert row.n_unpaired == 2 and row.n_dropped == 1 and row.n_pairs == 6
    kept = [2, 4, 5, 6, 7, 8]  # q2, q4..q8
    assert row.baseline_mean == pytest.approx(sum(BASE_R[i - 1] for i in kept) / 6)
    assert row.candidate_mean == pytest.approx(sum(CAND_R[i - 1] for i in kept) / 6)
    assert any(
        "1 queries only in the baseline, 1 only in the candidate" in w for w in comp.warnings
    )


# --------------------------------------------------------------------- Holm
def test_holm_family_is_each_metric_across_candidates_and_stages(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    mixed = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    add_run(db, "base", {"bm25": rows(**{"R@5": BASE_R, "MRR": BASE_R})})
    add_run(db, "c1", {"bm25": rows(**{"R@5": CAND_R, "MRR": mixed})})
    add_run(db, "c2", {"bm25": rows(**{"R@5": mixed, "MRR": CAND_R})})
    add_run(db, "c3", {"bm25": rows(**{"R@5": BASE_R, "MRR": mixed})})
    comp = compare_runs(db, ["base", "c1", "c2", "c3"], test="t", n_resamples=200)
    for metric in ("R@5", "MRR"):
        rows_ = comp.rows_for(metric)
        assert [r.candidate for r in rows_] == ["c1", "c2", "c3"]
        family = [r for r in rows_ if not r.identical]
        expected = holm_by_hand([r.p_value for r in family])
        assert [r.p_holm for r in family] == pytest.approx(expected)
        assert [r.significant for r in family] == [p < comp.alpha for p in expected]
    # c3's R@5 equals the baseline query for query: not a test, outside the family
    c3 = comp.rows_for("R@5")[2]
    assert c3.identical and c3.p_holm == 1.0 and not c3.significant
    # the smallest p of three (MRR) is multiplied by 3, not by 6 (families are per metric)
    smallest = min(comp.rows_for("MRR"), key=lambda r: r.p_value)
    assert smallest.p_holm == pytest.approx(min(1.0, 3 * smallest.p_value))
    # ...and R@5's family has two members
    smallest = min(comp.rows_for("R@5"), key=lambda r: r.p_value)
    assert smallest.p_holm == pytest.approx(min(1.0, 2 * smallest.p_value))


# --------------------------------------------------------------------- gate
def add_regression(db: ResultsDB) -> None:
    good = [1.0] * 12
    bad = [0.0] * 10 + [1.0] * 2
    lost_good, lost_bad = [0.0] * 12, [1.0] * 10 + [0.0] * 2
    add_run(db, "good", {"bm25": rows(**{"R@5": good, "MRR": bad, "lost": lost_good})})
    add_run(db, "bad", {"bm25": rows(**{"R@5": bad, "MRR": good, "lost": lost_bad})})


def test_gate_flags_significantly_worse_rows_on_the_gate_metrics(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    add_regression(db)
    comp = compare_runs(db, ["bad"], baseline="good", metrics=["R@5", "MRR", "lost"], seed=3)
    r_at_5 = only(comp, "R@5")
    assert r_at_5.delta == pytest.approx(-10 / 12) and r_at_5.significant
    # ten -1 differences and two zeros: 2**12 <= 10000 sign vectors, enumerated exactly;
    # only all-(+1) and all-(-1) on the ten reach |sum| = 10: p = 2 * 4 / 4096
    assert r_at_5.p_values["randomisation"] == pytest.approx(2 / 1024)
    assert [r.metric for r in gate(comp)] == ["R@5"]  # default: the first metric
    assert [r.metric for r in gate(comp, ["lost"])] == ["lost"]  # more lost: worse
    assert gate(comp, ["MRR"]) == []  # significantly *better*
    with pytest.raises(ConfigError, match="nDCG@5.*compared: R@5, MRR, lost"):
        gate(comp, ["nDCG@5"])


def test_a_run_compared_with_itself_passes_the_gate(db: ResultsDB) -> None:
    comp = compare_runs(db, ["base", "base"], baseline="base", n_resamples=200)
    assert comp.candidates == ["base"]
    assert all(r.delta == 0 and r.p_holm == 1.0 and not r.significant for r in comp.rows)
    assert gate(comp, comp.metrics) == []


# ------------------------------------------------------------- eval runs
def test_eval_runs_compare_every_stored_answer_metric(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    cfg = {"kind": "eval"}
    a = rows(exact_match=[1.0, 0.0, 1.0, 0.0], token_f1=[0.9, 0.2, 1.0, math.nan])
    b = rows(exact_match=[1.0, 1.0, 1.0, 0.0], token_f1=[0.9, 0.6, 1.0, 0.5])
    add_run(db, "e1", {"answer": a}, cfg)
    add_run(db, "e2", {"answer": b}, cfg)
    comp = compare_runs(db, ["e1", "e2"], n_resamples=200)
    assert comp.metrics == ["exact_match", "token_f1"]
    assert only(comp, "exact_match").delta == pytest.approx(0.25)
    f1 = only(comp, "token_f1")
    assert f1.n_pairs == 3 and f1.n_dropped == 1 and f1.delta == pytest.approx(0.4 / 3)


# ------------------------------------------------------------------ subsets
def test_dataset_subset_comes_from_the_results_folder(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "rbench.sqlite")
    cfg = {"table_k": 5, "datasets": [{"name": "one"}, {"name": "two"}]}
    for run, values in (("a", BASE_R), ("b", CAND_R)):
        add_run(db, run, {"bm25": rows(**{"R@5": values})}, cfg)
        lines = [
            {"dataset": "one" if q in ("q1", "q2", "q3") else "two", "stage": "bm25", "query_id": q}
            for q in QIDS
        ]
        (tmp_path / "results" / run).mkdir(parents=True)
        (tmp_path / "results" / run / "query_metrics.jsonl").write_text(
            "\n".join(json.dumps(x) for x in lines) + "\n"
        )
    comp = compare_runs(db, ["a", "b"], subset="dataset=two", n_resamples=200)
    row = only(comp, "R@5")  # q4..q8
    assert row.n_pairs == 5 and row.n_unpaired == 0
    assert row.delta == pytest.approx((0.5 + 0.0 + 0.5 + 0.0 + 0.5) / 5)
    with pytest.raises(ConfigError, match="no subset 'dataset=three'.*dataset=one, dataset=two"):
        compare_runs(db, ["a", "b"], subset="dataset=three")
    (tmp_path / "results" / "b" / "query_metrics.jsonl").unlink()
    with pytest.raises(ConfigError, match="query_metrics.jsonl is missing"):
        compare_runs(db, ["a", "b"], subset="dataset=one")


def test_meta_subset_reloads_the_questions_only_when_unchanged(tmp_path: Path) -> None:
    qfile = tmp_path / "questions.jsonl"
    qrows = [
        {"id": q, "query": "x", "gold_files": ["a.py"], "leaks_path": i % 2 == 0}
        for i, q in enumerate(QIDS)
    ]
    qfile.write_text("\n".join(json.dumps(r) for r in qrows) + "\n")
    fingerprint = dataset_fingerprint(load_examples(qfile).examples)
    cfg = {"table_k": 5, "datasets": [{"name": "d", "questions": str(qfile), "split": None}]}
    prov = {"datasets": {"d": {"dataset_fingerprint": fingerprint}}}
    db = ResultsDB(tmp_path / "db.sqlite")
    subsets = {"leaks_path=true": {"R@5": 0.5}, "leaks_path=false": {"R@5": 0.5}}
    for run, values in (("a", BASE_R), ("b", CAND_R)):
        add_run(db, run, {"bm25": rows(**{"R@5": values})}, cfg, prov, subsets)
    comp = compare_runs(db, ["a", "b"], subset="leaks_path=true", n_resamples=200)
    row = only(comp, "R@5")  # q1, q3, q5, q7
    assert row.n_pairs == 4 and row.delta == pytest.approx((0.0 + 0.5 + 0.0 + 0.0) / 4)
    qfile.write_text(qfile.read_text().replace('"x"', '"changed"'))
    with pytest.raises(ConfigError, match="changed since the run"):
        compare_runs(db, ["a", "b"], subset="leaks_path=true")


# ---------------------------------------------------------------- bad input
def test_unknown_run_is_an_unknown_run_error(db: ResultsDB) -> None:
    with pytest.raises(UnknownRunError, match="nope"):
        compare_runs(db, ["base", "nope"])
    with pytest.raises(UnknownRunError, match="nope"):
        compare_runs(db, ["nope:bm25", "base"])
    assert parse_target(db, "base:rrf").stage == "rrf" and parse_target(db, "cand").stage is None


def test_unknown_stage_or_metric_names_it_and_lists_the_choices(db: ResultsDB) -> None:
    with pytest.raises(ConfigError, match="stage 'dense' is not in both.*bm25, rrf"):
        compare_runs(db, ["base", "cand"], stages=["dense"])
    with pytest.raises(ConfigError, match="run cand has no stage 'dense'; its stages: bm25, rrf"):
        compare_runs(db, ["base:bm25", "cand:dense"])
    with pytest.raises(ConfigError, match="metric 'R@10' .*available: R@5, MRR, lost, P@5"):
        compare_runs(db, ["base", "cand"], metrics=["R@10"])
    with pytest.raises(ConfigError, match="at least two runs"):
        compare_runs(db, ["base"])
    with pytest.raises(ConfigError, match="unknown test 'z'"):
        compare_runs(db, ["base", "cand"], test="z")


def test_fewer_than_two_paired_queries_is_refused(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    add_run(db, "a", {"bm25": {"q1": {"R@5": 1.0}, "q2": {"R@5": 0.0}}})
    add_run(db, "b", {"bm25": {"q2": {"R@5": 1.0}, "q3": {"R@5": 0.0}}})
    with pytest.raises(ConfigError, match="share 1 query in subset all; .*at least 2"):
        compare_runs(db, ["a", "b"])


def test_a_metric_that_is_nan_everywhere_is_refused(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "db.sqlite")
    add_run(db, "a", {"bm25": rows(**{"R@5": [1.0, 0.0, 1.0]})})
    add_run(db, "b", {"bm25": rows(**{"R@5": [math.nan, math.nan, 1.0]})})
    with pytest.raises(ConfigError, match="'R@5' has fewer than 2 paired non-missing"):
        compare_runs(db, ["a", "b"])


# ---------------------------------------------------------------------- CLI
def test_cli_table_json_and_gate_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    with ResultsDB(root / "rbench.sqlite") as db:
        add_regression(db)
    ws = ["--workspace", str(root), "compare"]
    assert main([*ws, "good", "bad", "--metric", "R@5", "--metric", "MRR"]) == 0
    out = capsys.readouterr().out
    assert "test: randomisation (10000 resamples, seed 0), alpha 0.05" in out
    assert "R@5 (higher is better)" in out and "MRR (higher is better)" in out
    line = next(x for x in out.splitlines() if x.startswith("bad ") and "-0.833" in x)
    assert "▼**" in line and line.split()[1] == "bm25"

    assert main([*ws, "good", "bad", "--gate", "good", "--resamples", "500"]) == 1
    out = capsys.readouterr().out
    assert "gate: FAIL run bad stage bm25 metric R@5 delta -0.8333 p_holm" in out
    assert main([*ws, "good", "bad", "--gate", "good", "--gate-metric", "MRR"]) == 0
    assert "gate: pass" in capsys.readouterr().out

    assert main([*ws, "good", "bad", "--gate", "good", "--json", "--resamples", "500"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["gate"]["passed"] is False and data["gate"]["metrics"] == ["R@5"]
    assert set(data["rows"][0]["p_values"]) == {"randomisation", "t", "wilcoxon", "bootstrap"}
    assert data["holm_family"].startswith("each metric")


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    with ResultsDB(root / "rbench.sqlite") as db:
        add_run(db, "a", {"bm25": rows(**{"R@5": BASE_R})})
    ws = ["--workspace", str(root), "compare"]
    assert main([*ws, "a", "missing"]) == EXIT_BAD_INPUT
    assert "missing" in capsys.readouterr().err
    assert main([*ws, "a", "a", "--stage", "dense"]) == EXIT_BAD_INPUT
    assert "stage 'dense'" in capsys.readouterr().err
    assert main([*ws, "a", "a", "--gate-metric", "R@5"]) == EXIT_BAD_INPUT
    assert "--gate-metric needs --gate" in capsys.readouterr().err

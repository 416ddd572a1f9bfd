"""The paired columns of the per-stage table: every stage against the baseline and the
fusion guard, checked against direct calls of the statistics functions."""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from pathlib import Path

import pytest

from retrieval_bench.harness.compare.paired import (
    GuardTest,
    StageTest,
    decode,
    encode,
    fusion_inputs,
    paired_values,
    paired_view,
    resolve_baseline,
)
from retrieval_bench.metrics.stats import holm, randomisation_test

QUERIES = [f"q{i:02d}" for i in range(20)]


def rows(
    values: list[float], failed: Collection[int] = (), metric: str = "Acc@5"
) -> dict[str, dict[str, float]]:
    """Per-query rows of one stage: ``metric`` by position, ``failed`` at the given ones."""
    return {
        q: {metric: v, "failed": 1.0 if i in failed else 0.0}
        for i, (q, v) in enumerate(zip(QUERIES, values, strict=True))
    }


# 20 queries, so the test resamples (2**20 sign vectors > 10,000): the seed matters
BM25 = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0] * 2
DENSE = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0] * 2
RRF = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0] * 2


def test_delta_and_p_equal_direct_calls_of_the_stats_functions() -> None:
    per_query = {"bm25": rows(BM25), "dense": rows(DENSE), "rrf": rows(RRF)}
    view = paired_view(per_query, ["bm25", "dense", "rrf"], "bm25", "Acc@5", {})
    assert view is not None and (view.baseline, view.metric) == ("bm25", "Acc@5")
    p = {s: randomisation_test(BM25, v, n_resamples=10000, seed=0).p_value
         for s, v in (("dense", DENSE), ("rrf", RRF))}  # fmt: skip
    adjusted = dict(zip(p, holm(list(p.values())), strict=True))
    for stage, values in (("dense", DENSE), ("rrf", RRF)):
        test = view.tests[stage]
        assert test.delta == pytest.approx(sum(values) / 20 - sum(BM25) / 20)
        assert test.p_value == p[stage]
        assert test.p_holm == adjusted[stage]
        assert (test.n, test.queries) == (20, 20)
    assert adjusted["rrf"] == 2 * p["rrf"] < p["dense"]  # the adjustment did something
    assert view.tests["bm25"] == StageTest(None, None, None, 20, 20)  # the baseline: counts only


def test_a_stage_identical_to_the_baseline_stays_out_of_the_holm_family() -> None:
    per_query = {"bm25": rows(BM25), "copy": rows(BM25), "rrf": rows(RRF)}
    view = paired_view(per_query, ["bm25", "copy", "rrf"], "bm25", "Acc@5", {})
    assert view is not None
    assert view.tests["copy"] == StageTest(0.0, 1.0, 1.0, 20, 20)
    alone = randomisation_test(BM25, RRF, n_resamples=10000, seed=0).p_value
    assert view.tests["rrf"].p_holm == alone  # a family of one: not multiplied by 2


def test_failed_queries_are_left_out_of_the_pair() -> None:
    failed = {1, 6}  # dense failed there (scored 0, as the table shows it)
    dense = [0.0 if i in failed else v for i, v in enumerate(DENSE)]
    per_query = {"bm25": rows(BM25, failed={4}), "dense": rows(dense, failed=failed)}
    view = paired_view(per_query, ["bm25", "dense"], "bm25", "Acc@5", {})
    assert view is not None
    keep = [i for i in range(20) if i not in {1, 4, 6}]
    a, b = [BM25[i] for i in keep], [dense[i] for i in keep]
    test = view.tests["dense"]
    assert (test.n, test.queries) == (17, 20)
    assert test.delta == pytest.approx((sum(b) - sum(a)) / 17)
    assert test.p_value == randomisation_test(a, b, n_resamples=10000, seed=0).p_value
    assert view.tests["bm25"].n == 19  # its own failure only
    # NaN or missing values are no pair either
    per_query["dense"]["q00"]["Acc@5"] = math.nan
    del per_query["dense"]["q02"]["Acc@5"]
    assert paired_values(per_query["bm25"], per_query["dense"], "Acc@5")[0] == [
        BM25[i] for i in keep if i not in (0, 2)
    ]


FILES = [1.0] * 10 + [0.0] * 10  # the best input: Acc@5 0.5
ISSUE = [1.0] * 6 + [0.0] * 14  # a weaker input: 0.3


def test_a_fusion_worse_than_its_best_input_is_flagged_and_one_on_par_is_not() -> None:
    worse = [1.0, 1.0] + [0.0] * 18  # loses 8 of the best input's 10 hits
    on_par = [1.0] * 9 + [0.0] * 10 + [1.0]  # loses one hit, gains one
    per_query = {
        "issue": rows(ISSUE), "files": rows(FILES),
        "rrf-bad": rows(worse), "rrf-ok": rows(on_par), "rrf-issue-only": rows(worse),
    }  # fmt: skip
    inputs = {"rrf-bad": ["issue", "files"], "rrf-ok": ["issue", "files"],
              "rrf-issue-only": ["issue"]}  # fmt: skip
    view = paired_view(per_query, list(per_query), "issue", "Acc@5", inputs)
    assert view is not None
    p = randomisation_test(FILES, worse, n_resamples=10000, seed=0).p_value
    assert p < 0.05
    assert view.guards["rrf-bad"] == GuardTest("files", 0.1, 0.5, -0.4, p, 20, 20, True)
    ok = view.guards["rrf-ok"]
    assert ok.best_input == "files" and not ok.worse and ok.delta == 0.0
    # the input with weight 0 is not an input: only "issue" (0.3) is compared
    only = view.guards["rrf-issue-only"]
    assert only.best_input == "issue" and only.input_mean == pytest.approx(0.3)
    assert only.p_value == randomisation_test(ISSUE, worse, n_resamples=10000, seed=0).p_value
    assert only.worse is (only.p_value is not None and only.p_value < 0.05)


def test_a_lower_is_better_metric_flags_a_fusion_that_loses_more() -> None:
    lost = rows([0.0] * 20, metric="lost")
    more = rows([1.0] * 12 + [0.0] * 8, metric="lost")
    view = paired_view({"a": lost, "f": more}, ["a", "f"], "a", "lost", {"f": ["a"]})
    assert view is not None and view.guards["f"].worse and view.guards["f"].best_input == "a"
    fewer = paired_view({"a": more, "f": lost}, ["a", "f"], "a", "lost", {"f": ["a"]})
    assert fewer is not None and not fewer.guards["f"].worse  # significantly *better*


def test_no_view_without_the_baseline_or_its_metric() -> None:
    per_query = {"bm25": rows(BM25)}
    assert paired_view(per_query, ["bm25"], "dense", "Acc@5", {}) is None
    assert paired_view(per_query, ["bm25"], "bm25", "Acc@7", {}) is None


def test_subset_members_restrict_the_pairs() -> None:
    per_query = {"bm25": rows(BM25), "dense": rows(DENSE)}
    members = set(QUERIES[:10])
    view = paired_view(per_query, ["bm25", "dense"], "bm25", "Acc@5", {}, members)
    assert view is not None
    test = view.tests["dense"]
    assert (test.n, test.queries) == (10, 10)
    expected = randomisation_test(BM25[:10], DENSE[:10], n_resamples=10000, seed=0).p_value
    assert test.p_value == expected  # 2**10 <= 10,000: the exact enumeration


def test_encode_then_decode_gives_the_view_back() -> None:
    per_query = {"bm25": rows(BM25), "a:b": rows(RRF), "dense": rows(DENSE)}
    view = paired_view(per_query, list(per_query), "bm25", "Acc@5", {"a:b": ["bm25", "dense"]})
    assert view is not None
    table = {s: {"Acc@5": 0.5, **entries} for s, entries in encode(view).items()}
    assert decode(table) == view
    assert decode({"bm25": {"Acc@5": 0.5}}) is None  # a run stored before the columns


def test_defaults_of_the_baseline_and_the_inputs_of_a_fusion() -> None:
    config = {
        "retrievers": [{"name": "dense"}, {"name": "bm25", "id": "bm25-issue"}],
        "fusions": [{"name": "rrf"}, {"name": "rrf", "id": "lexical", "weights": {"dense": 0}},
                    {"name": "vote", "weights": {"dense": 2.0}}],
        "table_k": 5,
    }  # fmt: skip
    assert resolve_baseline(config) == ("dense", "R@5")
    assert resolve_baseline({**config, "table_columns": ["seconds", "Acc@1"]}) == (
        "dense", "Acc@1",
    )  # fmt: skip
    chosen = {**config, "baseline": {"stage": "bm25-issue", "metric": "MRR"}}
    assert resolve_baseline(chosen) == ("bm25-issue", "MRR")
    assert resolve_baseline(chosen, "lexical", "Acc@5") == ("lexical", "Acc@5")
    assert fusion_inputs(config) == {
        "rrf": ["dense", "bm25-issue"], "lexical": ["bm25-issue"],
        "vote": ["dense", "bm25-issue"],
    }  # fmt: skip


def test_an_ltr_fusions_inputs_are_its_models_sources(tmp_path: Path) -> None:
    model = tmp_path / "ltr.json"
    model.write_text(json.dumps({"sources": ["bm25-issue", "files"]}))
    config = {
        "retrievers": [{"name": "bm25"}, {"name": "bm25", "id": "bm25-issue"},
                       {"name": "bm25-files", "id": "files"}],
        "fusions": [{"name": "ltr", "model_file": str(model)},
                    {"name": "ltr", "id": "unreadable", "model_file": str(tmp_path / "none")}],
    }  # fmt: skip
    assert fusion_inputs(config) == {
        "ltr": ["bm25-issue", "files"], "unreadable": ["bm25", "bm25-issue", "files"],
    }  # fmt: skip

"""The funnel's plan and counts on hand-computed examples (no I/O)."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.web.funnel import (
    CONTEXT,
    FunnelQuery,
    PlannedStep,
    chunk_path,
    compute,
    plan,
)

PIPELINE = {"bm25": "corpus", "exact": "corpus", "rrf": "retrievers", "vote": "retrievers",
            "llm": "rrf", "llm2": "llm"}  # fmt: skip


def keys(steps: list[PlannedStep]) -> list[str]:
    return [s.key for s in steps]


def test_plan_follows_the_chain_that_ends_at_the_chosen_stage() -> None:
    full = plan(PIPELINE, "llm2", 5)
    assert keys(full) == ["candidates", "fused", "reranked:llm", "reranked:llm2", CONTEXT]
    assert full[0].stages == ("bm25", "exact") and full[0].label == "candidates (bm25 ∪ exact)"
    assert full[1].stages == ("rrf",) and full[-1].label == "context (top 5 files of llm2)"
    assert keys(plan(PIPELINE, "vote", 3)) == ["candidates", "fused", CONTEXT]
    assert plan(PIPELINE, "vote", 3)[1].label == "fused (vote)"
    # a retriever alone: its own candidates, not the union
    solo = plan(PIPELINE, "exact", 5)
    assert keys(solo) == ["candidates", CONTEXT] and solo[0].stages == ("exact",)
    # a reranker straight on a retriever: no fused step
    assert keys(plan({"bm25": "corpus", "ce": "bm25"}, "ce", 5)) == [
        "candidates", "reranked:ce", CONTEXT]  # fmt: skip
    # a parent the run did not store: only the context can be told
    assert keys(plan({"ce": "gone"}, "ce", 5)) == [CONTEXT]
    # stored without a parent: read as a retriever
    assert keys(plan({"bm25": None, "rrf": "retrievers"}, "rrf", 5))[0] == "candidates"


def test_plan_of_a_fusion_with_declared_inputs_unites_only_those() -> None:
    declared = {"bm25": "corpus", "exact": "corpus", "dense": "corpus",
                "rrf": "bm25, exact", "ce": "rrf"}  # fmt: skip
    steps = plan(declared, "ce", 5)
    assert keys(steps) == ["candidates", "fused", "reranked:ce", CONTEXT]
    assert steps[0].stages == ("bm25", "exact") and steps[0].label == "candidates (bm25 ∪ exact)"


def query(qid: str, gold: set[str], missing: set[str], **steps: set[str]) -> FunnelQuery:
    return FunnelQuery(qid, frozenset(gold), frozenset(missing), steps)


def test_counts_recall_found_and_lost_per_step() -> None:
    steps = plan({"a": "corpus", "b": "corpus", "f": "retrievers"}, "f", 2)
    queries = [
        # 4 gold, one not in the snapshot; candidates find 3, fusion keeps 2, top 2 keeps 1
        query("q1", {"g1", "g2", "g3", "g4"}, {"g4"},
              candidates={"g1", "g2", "g3", "x"}, fused={"g1", "g2", "x"}, context={"g1", "x"}),
        # 1 gold found all the way
        query("q2", {"h"}, set(), candidates={"h"}, fused={"h"}, context={"h"}),
        # 2 gold, none found by any retriever
        query("q3", {"i", "j"}, set(), candidates={"y"}, fused={"y"}, context={"y"}),
        # no gold: not counted
        query("q4", set(), set(), candidates={"z"}, fused={"z"}, context={"z"}),
    ]  # fmt: skip
    cand, fused, ctx = compute(steps, queries)
    assert [s.key for s in (cand, fused, ctx)] == ["candidates", "fused", CONTEXT]
    assert (cand.gold, cand.n_queries) == (7, 3)
    # recall: mean over q1..q3 of found/gold
    assert cand.recall == pytest.approx((3 / 4 + 1 + 0) / 3)
    assert fused.recall == pytest.approx((2 / 4 + 1 + 0) / 3)
    assert ctx.recall == pytest.approx((1 / 4 + 1 + 0) / 3)
    assert (cand.found, fused.found, ctx.found) == (4, 3, 2)
    # lost: q3's 2 gold files are lost at the candidates; g4 (missing) never is
    assert (cand.lost, fused.lost, ctx.lost) == (2, 1, 1)


def test_a_step_that_brings_a_file_back_does_not_count_it_lost_twice() -> None:
    steps = [PlannedStep("candidates", "c", ("a",)), PlannedStep(CONTEXT, "ctx", ("a",))]
    (cand, ctx) = compute(steps, [query("q", {"g"}, set(), context={"g"})])
    assert (cand.found, cand.lost, ctx.found, ctx.lost) == (0, 1, 1, 0)


def test_no_queries_with_gold() -> None:
    (step,) = compute([PlannedStep(CONTEXT, "ctx", ("a",))], [query("q", set(), set())])
    assert math.isnan(step.recall) and (step.found, step.gold, step.lost) == (0, 0, 0)


def test_chunk_path_reads_the_file_of_a_chunk_id() -> None:
    assert chunk_path("src/a.py:10-42:3f2a09") == "src/a.py"
    assert chunk_path("dir with:colon/b.py:1-2:ab") == "dir with:colon/b.py"
    assert chunk_path("not-a-chunk") is None
    assert chunk_path(":1-2:ab") is None

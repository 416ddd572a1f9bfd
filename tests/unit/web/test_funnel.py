"""The funnel's plan and counts on hand-computed examples (no I/O)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_bench.contracts.chunker import chunk_id
from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.runs.lifting import ranked_ids
from retrieval_bench.types import Chunk, Example, Run
from retrieval_bench.web.funnel import (
    CONTEXT,
    FunnelQuery,
    PlannedStep,
    chunk_path,
    compute,
    doc_file,
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


def test_doc_file_reads_chunk_file_and_entity_ids() -> None:
    assert doc_file("src/a.py:10-42:3f2a09") == "src/a.py"
    assert doc_file("file:src/a.py") == "src/a.py"  # a file-level stage's file
    assert doc_file("file:vendor/not here.py") == "vendor/not here.py"  # not in the snapshot
    assert doc_file("entity:src/a.py:Cart.total") == "src/a.py"  # an entity is its file
    assert doc_file("entity:src/a.py:f") == "src/a.py"
    for other in ("not-a-chunk", "file:", "entity:src/a.py", "entity::f"):
        assert doc_file(other) is None, other


def _chunk(path: str) -> Chunk:
    return Chunk(chunk_id(path, 1, 9, path), path, 1, 9, "python", "function", "f", path, 10)


CORPUS = Corpus(Path("."), [_chunk(p) for p in ("a.py", "b.py", "c.py", "d.py")])
CID = {c.path: c.id for c in CORPUS.chunks}


def test_a_file_level_stage_counts_as_its_stored_metrics() -> None:
    """bm25 (chunks) reranked by a code-graph-like stage whose run holds file: and
    entity: ids (one of a file the snapshot lacks): the funnel's steps equal the
    stage's stored R@10 (its whole list), R@2 (the context) and Lost@2."""
    examples = [Example("q1", "?", ("a.py", "b.py", "c.py")), Example("q2", "?", ("b.py",))]
    bm25 = Run("bm25", {"q1": {CID["a.py"]: 4.0, CID["b.py"]: 3.0, CID["c.py"]: 2.0,
                               CID["d.py"]: 1.0},
                        "q2": {CID["d.py"]: 2.0, CID["b.py"]: 1.0}})  # fmt: skip
    graph = Run("graph", {"q1": {"file:d.py": 4.0, "entity:a.py:A.f": 3.0, "file:x.py": 2.0,
                                 "entity:b.py:g": 1.0},
                          "q2": {"entity:b.py:h": 2.0, "file:d.py": 1.0}})  # fmt: skip
    stored = evaluate_stage(graph, examples, CORPUS, ks=[2, 10], budgets=[], inputs=[bm25])
    steps = plan({"bm25": "corpus", "graph": "bm25"}, "graph", 2)
    assert [s.key for s in steps] == ["candidates", "reranked:graph", CONTEXT]

    def files(run: Run, qid: str) -> list[str]:
        ids = ranked_ids(run.scores[qid])
        return list(dict.fromkeys(f for i in ids if (f := doc_file(i)) is not None))

    queries = [
        FunnelQuery(ex.id, frozenset(ex.gold_files), frozenset(),
                    {"candidates": files(bm25, ex.id), "reranked:graph": files(graph, ex.id),
                     CONTEXT: files(graph, ex.id)[:2]})
        for ex in examples
    ]  # fmt: skip
    cand, graph_step, ctx = compute(steps, queries)
    assert (cand.recall, cand.found, cand.gold, cand.lost) == (1.0, 4, 4, 0)
    # graph's whole list holds a, b (q1) and b (q2): c is lost there, b of q1 at the top 2
    assert graph_step.recall == pytest.approx(stored.means["R@10"]) == pytest.approx(5 / 6)
    assert (graph_step.found, graph_step.lost) == (3, 1)
    assert ctx.recall == pytest.approx(stored.means["R@2"]) == pytest.approx(2 / 3)
    assert (ctx.found, ctx.lost) == (2, 1)
    lost_at_2 = sum(q["Lost@2"] for q in stored.per_query.values())
    assert graph_step.lost + ctx.lost == lost_at_2 == 2

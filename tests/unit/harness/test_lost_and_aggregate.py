"""Lost-at-stage attribution and table aggregation, hand-computed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.lost import lost_files
from retrieval_bench.harness.runner import _aggregate
from retrieval_bench.types import Chunk, Example, Run


def _chunk(cid: str, path: str) -> Chunk:
    return Chunk(cid, path, 1, 2, "python", "file", None, "x", 1)


CORPUS = Corpus(Path("."), [_chunk("a1", "a.py"), _chunk("b1", "b.py"), _chunk("c1", "c.py")])
EXAMPLES = [
    Example("q1", "?", ("a.py", "b.py")),
    Example("q2", "?", ("c.py", "missing.py")),
]


def test_retriever_loses_gold_it_never_returned() -> None:
    run = Run("r", {"q1": {"a1": 1.0}, "q2": {"c1": 1.0}})
    # missing.py is not in the snapshot: never counted as lost
    assert lost_files(run, [], EXAMPLES, CORPUS) == {"q1": ["b.py"]}


def test_fusion_loses_only_what_some_parent_had() -> None:
    parent1 = Run("p1", {"q1": {"a1": 1.0}, "q2": {}})
    parent2 = Run("p2", {"q1": {"b1": 1.0}, "q2": {}})
    fused = Run("f", {"q1": {"a1": 1.0}})
    # q1: b.py was found by p2 and dropped; q2: nobody had c.py, so fusion lost nothing
    assert lost_files(fused, [parent1, parent2], EXAMPLES, CORPUS) == {"q1": ["b.py"]}
    # cut-offs: the fused top 1 drops b.py even when the fused list has it further down
    fused2 = Run("f", {"q1": {"a1": 1.0, "b1": 0.5}})
    assert lost_files(fused2, [parent1, parent2], EXAMPLES, CORPUS) == {}
    assert lost_files(fused2, [parent1, parent2], EXAMPLES, CORPUS, k=1) == {"q1": ["b.py"]}
    assert lost_files(fused2, [parent1, parent2], EXAMPLES, CORPUS, k=1, parent_k=0) == {}


def test_aggregate_averages_each_metric_over_queries_that_have_it() -> None:
    outcome: Any = SimpleNamespace(
        per_query={
            "s": {
                "q1": {"R@5": 1.0, "line_F1@5": 0.5},
                "q2": {"R@5": 0.0},
                "q3": {"R@5": 0.5, "line_F1@5": 0.25},
            }
        },
        stages=[SimpleNamespace(name="s", seconds=2.0, llm_calls=3, llm_cache_hits=1)],
    )
    table = _aggregate([outcome], ["s"], {"q1", "q2", "q3"})
    assert table["s"]["R@5"] == 0.5
    assert table["s"]["line_F1@5"] == 0.375  # q2 has no spans: not counted as zero
    assert table["s"]["seconds"] == 2.0
    assert table["s"]["llm_calls"] == 3.0 and table["s"]["llm_cache_hits"] == 1.0
    assert _aggregate([outcome], ["s"], {"q2"})["s"]["R@5"] == 0.0

"""Module- and function-level measures of chunk and file runs, hand-computed
(docs/metrics.md#function-and-module-level)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.scoring import entity_ranking, evaluate_stage
from retrieval_bench.types import Chunk, Example, Run


def _chunk(cid: str, path: str, first: int, symbol: str | None) -> Chunk:
    return Chunk(cid, path, first, first + 1, "python", "function", symbol, "x", 1)


CHUNKS = [
    _chunk("c1", "a.py", 1, "A.f"),
    _chunk("c2", "a.py", 10, "A.g"),
    _chunk("c3", "a.py", 20, None),  # module-level code: no function
    _chunk("c4", "b.py", 1, "h"),
    _chunk("c5", "a.py", 3, "A.f"),  # a second window of A.f
]
CORPUS = Corpus(Path("."), CHUNKS)
GOLD = Example("q", "?", ("a.py", "b.py"), gold_functions=("a.py:A.g", "b.py:h"))
PLAIN = Example("p", "?", ("a.py",))  # no gold functions: no entity measures


def test_entity_rankings_by_best_chunk() -> None:
    ranked = ["c3", "c5", "c4", "c1", "c2"]
    assert entity_ranking(ranked, CORPUS) == ["a.py:A.f", "b.py:h", "a.py:A.g"]
    assert entity_ranking(ranked, CORPUS, modules=True) == ["a.py:A", "b.py:h"]
    # entity ids (another system's found_entities) are their entities
    assert entity_ranking(["entity:x.py:K.m", "c4", "entity:b.py:h"], CORPUS) == [
        "x.py:K.m", "b.py:h"]  # fmt: skip


def test_an_entity_run_at_every_level() -> None:
    """found_entities of another system: files by their best entity, functions as given."""
    run = Run("ext", {"q": {"entity:a.py:A.f": 3.0, "entity:b.py:h": 2.0, "entity:a.py:A.g": 1.0}})
    q = evaluate_stage(run, [GOLD], CORPUS, ks=[1, 2], budgets=[]).per_query["q"]
    assert (q["R@1"], q["Acc@2"]) == (0.5, 1.0)  # files: a.py, b.py
    assert (q["function_R@2"], q["function_MRR"]) == (0.5, 0.5)  # A.f, h (gold), A.g (gold)
    assert q["module_R@1"] == 0.5 and q["module_Acc@2"] == 1.0


def test_function_and_module_measures_by_hand() -> None:
    run = Run("r", {"q": {"c3": 5.0, "c5": 4.0, "c4": 3.0, "c1": 2.0, "c2": 1.0},
                    "p": {"c1": 1.0}})  # fmt: skip
    m = evaluate_stage(run, [GOLD, PLAIN], CORPUS, ks=[1, 2, 3], budgets=[]).per_query
    q = m["q"]
    # functions: A.f (1), h (2, gold), A.g (3, gold)
    assert (q["function_Acc@1"], q["function_Acc@2"], q["function_Acc@3"]) == (0.0, 0.0, 1.0)
    assert (q["function_R@1"], q["function_R@2"], q["function_R@3"]) == (0.0, 0.5, 1.0)
    assert q["function_Hit@2"] == 1.0 and q["function_MRR"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    assert q["function_nDCG@3"] == pytest.approx(dcg / (1 + 1 / math.log2(3)))
    assert q["function_MAP"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    # modules: a.py:A (1, gold: A.g's module), b.py:h (2, gold)
    assert (q["module_Acc@1"], q["module_Acc@2"]) == (0.0, 1.0)
    assert (q["module_R@1"], q["module_MRR"], q["module_nDCG@2"]) == (0.5, 1.0, 1.0)
    assert not any(k.startswith(("function_", "module_")) for k in m["p"])


def test_a_file_run_stands_for_its_chunks_in_line_order() -> None:
    run = Run("files", {"q": {"file:b.py": 2.0, "file:a.py": 1.0}})
    q = evaluate_stage(run, [GOLD], CORPUS, ks=[1, 2], budgets=[]).per_query["q"]
    # b.py: h (1, gold); a.py in line order: A.f (c1, c5), A.g (gold, 3)
    assert q["function_MRR"] == 1.0 and q["function_R@2"] == 0.5 and q["function_Acc@2"] == 0.0

"""Module- and function-level measures of chunk and file runs, hand-computed
(docs/metrics.md#function-and-module-level)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.entities import chunk_entities, entity_ranking
from retrieval_bench.metrics.retrieval.scoring import UNMAPPED, evaluate_stage
from retrieval_bench.types import Chunk, Example, Run
from tests.unit.chunking.helpers import ast_chunks, source


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


PAY = (
    "import os\n\n"
    "def handle_payment(order, card):\n"
    '    """Charge the card for the order total."""\n'
    "    return card.charge(order.total)\n\n"
    "def refund(order):\n    return order.total\n"
)
TOKENS = (
    "class TokenVerifier:\n"
    "    secret = 'x'\n\n"
    "    def verify_token(self, token):\n"
    "        def inner():\n            return token\n"
    "        return inner()\n"
)


def _small_corpus(files: dict[str, str]) -> Corpus:
    """The ast chunker's corpus of small files (each fits one chunk: no symbol)."""
    chunks = [c for path, text in files.items() for c in ast_chunks(path, text)]
    return Corpus(Path("/nonexistent"), chunks, sources={p: source(p, t) for p, t in files.items()})


def test_a_chunk_stands_for_every_definition_of_its_lines() -> None:
    """A file that fits one chunk has no symbol, yet stands for its functions; a class
    that fits one stands for the class (its attribute line) and its methods, a nested
    function for its outer function; module-level lines (the import) for nothing."""
    corpus = _small_corpus({"pay.py": PAY, "m.py": TOKENS})
    (pay,) = corpus.chunks_of("pay.py")
    (tok,) = corpus.chunks_of("m.py")
    assert pay.symbol is None and tok.symbol in (None, "TokenVerifier")
    assert chunk_entities(pay, corpus) == ("pay.py:handle_payment", "pay.py:refund")
    assert set(chunk_entities(tok, corpus)) == {"m.py:TokenVerifier",
                                                "m.py:TokenVerifier.verify_token"}  # fmt: skip
    assert entity_ranking([tok.id, pay.id], corpus, modules=True) == [
        "m.py:TokenVerifier", "pay.py:handle_payment", "pay.py:refund"]  # fmt: skip


def test_a_small_file_function_is_credited_to_its_chunk() -> None:
    """Before chunks stood for every definition of their lines, this scored 0."""
    corpus = _small_corpus({"pay.py": PAY, "m.py": TOKENS})
    gold = ("pay.py:handle_payment", "m.py:TokenVerifier.verify_token")
    ex = Example("q", "?", ("pay.py", "m.py"), gold_functions=gold)
    ids = {c.path: c.id for c in corpus.chunks}
    run = Run("bm25", {"q": {ids["pay.py"]: 2.0, ids["m.py"]: 1.0}})
    q = evaluate_stage(run, [ex], corpus, ks=[1, 5], budgets=[]).per_query["q"]
    # functions: handle_payment (1, gold), refund (2), TokenVerifier.verify_token (3+, gold)
    assert q["function_Acc@5"] == 1.0 and q["function_MRR"] == 1.0
    assert q["function_R@1"] == 0.5 and q["module_Acc@5"] == 1.0
    assert q[UNMAPPED] == 0.0


def test_gold_functions_no_chunk_stands_for_are_flagged() -> None:
    corpus = _small_corpus({"pay.py": PAY})
    ex = Example("q", "?", ("pay.py",), gold_functions=("pay.py:gone", "lost.py:f"))
    ok = Example("k", "?", ("pay.py",), gold_functions=("pay.py:refund",))
    run = Run("r", {"q": {}, "k": {}})
    m = evaluate_stage(run, [ex, ok], corpus, ks=[1], budgets=[])
    assert (m.per_query["q"][UNMAPPED], m.per_query["k"][UNMAPPED]) == (1.0, 0.0)
    assert m.means[UNMAPPED] == 0.5

"""The ``function-ranker`` fusion: candidates named as gold functions, hand-computed
features, the untrained score's order, entity ids out and the recorded feature rows
(docs/stages.md#function-ranker)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.contracts.registry import FUSIONS
from retrieval_bench.datasets.gold_functions import definitions
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.function_features import (
    DEFINITION_FEATURES,
    Candidate,
    bm25_scores,
    default_scores,
    definition_ranks,
    feature_names,
    file_candidates,
    query_rows,
)
from retrieval_bench.rank_fusion.function_ranker import FunctionRanker
from retrieval_bench.runs.file_ids import entity_of
from retrieval_bench.runs.lifting import file_level_run
from tests.unit.rank_fusion.function_fixtures import CART, chunk_run, write_corpus

ISSUE = (
    "Cart.add_item fails on a new item\n\n"
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/shop/cart.py", line 9, in add_item\n'
    "TypeError: unsupported operand\n"
)


def _fusion(corpus: Any, query: str, **params: Any) -> FunctionRanker:
    fusion = FunctionRanker(**params)
    fusion.corpus = corpus
    fusion.queries = {"q": query}
    return fusion


def _row(x: np.ndarray, names: list[str], i: int) -> dict[str, float]:
    return dict(zip(names, x[i].tolist(), strict=True))


def test_candidates_are_named_as_definitions_names_gold(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    cands = file_candidates(corpus, "shop/cart.py")
    # nested price_of is compute_total's entity; the getter and setter are one size
    assert [c.entity for c in cands] == list(
        dict.fromkeys(f"shop/cart.py:{d.entity}" for d in definitions(CART))
    )
    assert [(c.name, c.kind, c.start, c.lines) for c in cands] == [
        ("Cart", "class", 4, 14), ("Cart.add_item", "method", 7, 3),
        ("Cart.size", "method", 11, 6), ("compute_total", "function", 20, 4),
    ]  # fmt: skip
    assert cands[1].calls >= {"append", "compute_total"} and "add_item" not in cands[1].calls
    assert "price_of" in cands[3].calls  # the nested function's call is its outer's
    assert file_candidates(corpus, "README.md") == () and file_candidates(corpus, "no.py") == ()


def test_bm25_by_hand() -> None:
    def cand(name: str, tf: dict[str, int]) -> Candidate:
        return Candidate(f"a.py:{name}", "a.py", name, "function", 1, 1, 1, tf, sum(tf.values()))

    a, b = cand("a", {"cart": 2, "total": 1}), cand("b", {"cart": 1})
    got = bm25_scores([a, b], {"cart": 1.0, "total": 2.0}, k1=1.2, b=0.75)
    # N = 2, avgdl = 2; idf(cart) = ln(1 + .5/2.5), idf(total) = ln(1 + 1.5/1.5)
    idf_cart, idf_total = math.log(1.2), math.log(2.0)
    norm_a, norm_b = 1.2 * (0.25 + 0.75 * 3 / 2), 1.2 * (0.25 + 0.75 * 1 / 2)
    want_a = idf_cart * 2 * 2.2 / (2 + norm_a) + 2.0 * idf_total * 1 * 2.2 / (1 + norm_a)
    want_b = idf_cart * 1 * 2.2 / (1 + norm_b)
    assert got == pytest.approx([want_a, want_b], rel=1e-12)
    assert bm25_scores([], {"cart": 1.0}, 1.2, 0.75) == []


def test_issue_and_name_features(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    raw = chunk_run(corpus, "bm25", ["shop/cart.py", "shop/util.py"])
    runs = [file_level_run(raw, corpus)]
    cands, x = query_rows(corpus, runs, "q", ISSUE, raw_runs=[raw])
    names = feature_names(["bm25"])
    assert x.shape == (len(cands), len(DEFINITION_FEATURES) + 5)
    assert names[-5:] == ["bm25:file_score", "bm25:file_rr", "bm25:def_rr", "file:best_rr",
                          "def:best_rr"]  # fmt: skip
    rows = {c.name: _row(x, names, i) for i, c in enumerate(cands)}
    assert list(rows) == ["Cart", "Cart.add_item", "Cart.size", "compute_total",
                          "round_cents", "log_event"]  # fmt: skip
    add, size, cart = rows["Cart.add_item"], rows["Cart.size"], rows["Cart"]
    total = rows["compute_total"]
    assert (add["name:in_issue"], add["name:qualified_in_issue"]) == (1, 1)
    assert add["name:class_in_issue"] == 1
    assert (add["frame:name"], add["frame:file_and_name"], add["path:in_issue"]) == (1, 1, 1)
    assert (size["name:in_issue"], size["name:class_in_issue"], size["frame:name"]) == (0, 1, 0)
    assert (cart["name:in_issue"], cart["name:class_in_issue"], cart["kind:class"]) == (1, 0, 1)
    # compute_total is called by the named add_item; add_item calls no named definition
    assert (total["graph:called_by_named"], total["graph:calls_named"]) == (1, 0)
    assert (add["graph:called_by_named"], add["graph:calls_named"]) == (0, 0)
    assert rows["round_cents"]["path:in_issue"] == 0 and rows["round_cents"]["frame:name"] == 0
    # shape: lines, kind, depth, place in the file
    assert total["size:log_lines"] == round(math.log1p(4), 4)
    assert (total["kind:function"], total["def:depth"], size["def:depth"]) == (1, 0, 1)
    assert total["file:position"] == round(19 / 24, 4) and cart["file:is_test"] == 0
    # file features: cart.py is bm25's first file, util.py its second (score 0 after min-max)
    assert (add["bm25:file_score"], add["bm25:file_rr"], add["file:best_rr"]) == (1, 1, 1)
    assert (rows["log_event"]["bm25:file_score"], rows["log_event"]["file:best_rr"]) == (0, 0.5)
    # each definition's own rank in bm25's function ranking (its chunks' definitions)
    own = definition_ranks(raw, "q", corpus)
    assert own and all(
        rows[c.name]["bm25:def_rr"] == round(1 / own[c.entity], 4) == rows[c.name]["def:best_rr"]
        for c in cands if c.entity in own
    )  # fmt: skip
    # a file run names no definition
    assert definition_ranks(runs[0], "q", corpus) == {}
    # BM25: the best candidate is normalised to 1 and ranked first
    best = max(rows.values(), key=lambda r: r["def:bm25"])
    assert (best["def:bm25_norm"], best["def:bm25_rr"]) == (1.0, 1.0)
    assert rows["log_event"]["def:bm25"] == 0
    assert np.array_equal(x, np.round(x, 4))


def test_untrained_score_order_and_entity_ids(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    first = chunk_run(corpus, "bm25", ["shop/util.py", "shop/cart.py"])
    second = chunk_run(corpus, "files", ["tests/test_cart.py"])
    fusion = _fusion(corpus, "round_cents gives the wrong amount")
    run = fusion.fuse([first, second], k=20)
    # round_cents: BM25 1 + 1/rank 1 + 0.5 (named); log_event 0 + 1; the test 0 + 1 (second
    # input's first file); cart.py's four 0 + 1/2, tied, by id
    assert run.ids("q") == [
        "entity:shop/util.py:round_cents", "entity:shop/util.py:log_event",
        "entity:tests/test_cart.py:test_total", "entity:shop/cart.py:Cart",
        "entity:shop/cart.py:Cart.add_item", "entity:shop/cart.py:Cart.size",
        "entity:shop/cart.py:compute_total",
    ]  # fmt: skip
    assert run.scores["q"]["entity:shop/util.py:round_cents"] == pytest.approx(2.5)
    assert all(entity_of(d) for d in run.ids("q"))
    assert fusion.scored_by == {"held_out_fold": 0, "full_model": 0, "untrained": 1}
    assert fusion.fuse([first, second], k=2).ids("q") == run.ids("q")[:2]
    # top_n: only each input's first file
    narrow = _fusion(corpus, "round_cents", top_n=1).fuse([first, second], k=20)
    assert {d.rsplit(":", 1)[0] for d in narrow.ids("q")} == {
        "entity:shop/util.py", "entity:tests/test_cart.py"}  # fmt: skip
    assert fusion.artifacts == {}


def test_default_scores_formula() -> None:
    names = feature_names(["a"])
    x = np.zeros((1, len(names)))
    for name, value in [("def:bm25_norm", 0.4), ("file:best_rr", 0.5), ("name:in_issue", 1),
                        ("frame:name", 1), ("def:bm25", 9.0)]:  # fmt: skip
        x[0, names.index(name)] = value
    assert default_scores(x, names).tolist() == pytest.approx([0.4 + 0.5 + 0.5 + 0.5])


def test_record_features_stores_each_questions_rows(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    run = chunk_run(corpus, "bm25", ["shop/cart.py", "shop/util.py"])
    fusion = _fusion(corpus, ISSUE, record_features=True)
    fusion.fuse([run], k=3)
    art = fusion.artifacts["q"]
    cands, x = query_rows(corpus, [file_level_run(run, corpus)], "q", ISSUE, raw_runs=[run])
    assert art["sources"] == ["bm25"] and art["features"] == feature_names(["bm25"])
    assert [e for e, _ in art["candidates"]] == [c.entity for c in cands]  # all, not the top k
    assert np.array_equal(np.asarray([r for _, r in art["candidates"]]), x)
    assert all(isinstance(v, int) for v in art["candidates"][0][1] if v in (0, 1))


def test_a_question_without_candidates_ranks_nothing(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    fusion = _fusion(corpus, "anything", record_features=True)
    run = fusion.fuse([chunk_run(corpus, "bm25", ["README.md"])], k=5)
    assert run.scores == {"q": {}}
    assert fusion.artifacts["q"]["candidates"] == []


def test_params_flags_and_registry(tmp_path: Path) -> None:
    made = FUSIONS.create("function-ranker", {"top_n": 3, "k1": 1.5})
    assert isinstance(made, FunctionRanker) and made.params.top_n == 3 and made.model is None
    assert FunctionRanker.needs_queries and FunctionRanker.needs_corpus
    assert not FunctionRanker.lifts_inputs and FunctionRanker.ranks_for({}, ["files"]) == "chunks"
    for bad in ({"top_n": 0}, {"b": 1.5}, {"k1": -1}, {"topn": 2}):
        with pytest.raises(ConfigError):
            FunctionRanker.Params.of(bad)
    with pytest.raises(ConfigError, match="no corpus"):
        FunctionRanker().fuse([], 5)
    FunctionRanker.check_inputs({"inputs": ["bm25"]}, [], [])  # no model file: nothing to read

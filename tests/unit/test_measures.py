"""Measures as values: every name the scoring produces parses to a measure that
prints back to it, with the direction and cut a hand reading gives
(docs/metrics.md#measures-as-values)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.measures import Measure, cut_lists, parse_measure
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.types import Chunk, Example, Run, Span


def test_every_name_evaluate_stage_produces_round_trips() -> None:
    chunks = [Chunk(f"c{i}", f"f{i}.py", 1, 3, "python", "file", None, "x y", 5) for i in range(3)]
    corpus = Corpus(Path("."), chunks)
    ex = Example("q", "?", ("f0.py",), gold_spans=(Span("f0.py", 1, 2),))
    run = Run("r", {"q": {"c0": 1.0, "c1": 0.5}})
    names = evaluate_stage(run, [ex], corpus, ks=[1, 5], budgets=[8000, 512]).per_query["q"]
    assert len(names) > 40
    for name in names:
        measure = parse_measure(name, strict=True)
        assert str(measure) == name and not measure.opaque
        assert measure.higher_is_better == (not name.startswith("Lost@"))


@pytest.mark.parametrize(
    ("text", "measure"),
    [
        ("Acc@5", Measure("Acc", cutoff=5)),
        ("R@10", Measure("R", cutoff=10)),
        ("Lost@5", Measure("Lost", cutoff=5)),
        ("F1@8k", Measure("F1", budget=8000)),
        ("P@8.192k", Measure("P", budget=8192)),
        ("MRR", Measure("MRR")),
        ("chunk_MAP", Measure("MAP", level="chunk_")),
        ("line_F1@0.5k", Measure("F1", budget=500, level="line_")),
        ("chunk_nDCG@3", Measure("nDCG", cutoff=3, level="chunk_")),
    ],
)
def test_parse_by_hand(text: str, measure: Measure) -> None:
    assert parse_measure(text) == measure and str(measure) == text


@pytest.mark.parametrize(
    "text", ["Acc@0", "Acc@05", "MRR@5", "chunk_F1@8k", "Lost", "F1@8.0k", "nDCG@8k", "acc@5"]
)
def test_malformed_names_are_opaque_or_rejected(text: str) -> None:
    assert parse_measure(text).opaque
    with pytest.raises(ConfigError, match="is not a retrieval measure"):
        parse_measure(text, strict=True)


def test_opaque_names_keep_their_text_and_direction() -> None:
    assert str(parse_measure("token_f1")) == "token_f1"
    assert parse_measure("token_f1").higher_is_better
    for cost in ("lost", "failed", "seconds", "llm_calls", "llm_tokens"):
        assert not parse_measure(cost).higher_is_better


def test_cut_lists_and_at_operator() -> None:
    measures = [parse_measure(t) for t in ("Acc@5", "R@10", "F1@8k", "MRR", "Acc@5")]
    assert cut_lists(measures) == ([5, 10], [8000])
    assert str(Measure("Acc") @ 3) == "Acc@3"


@given(st.sampled_from(["P", "R", "Hit", "Acc", "nDCG", "F1", "Lost"]), st.integers(1, 10_000))
def test_rank_cutoffs_round_trip(family: str, k: int) -> None:
    assert str(parse_measure(f"{family}@{k}", strict=True)) == f"{family}@{k}"


@given(st.sampled_from(["P", "R", "F1"]), st.integers(1, 10**7))
def test_budgets_round_trip(family: str, budget: int) -> None:
    measure = Measure(family, budget=budget)
    assert parse_measure(str(measure), strict=True) == measure

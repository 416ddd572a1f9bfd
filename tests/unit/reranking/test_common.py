"""Shared reranker helpers: prompt files, truncation, candidates, stable scores."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.reranking.common import (
    candidates_of,
    load_prompt,
    positive_ints,
    stable_scores,
    truncate_snippet,
)
from retrieval_bench.types import Run
from tests.unit.reranking.helpers import chunk, corpus_of, input_run


def test_yesno_prompt_file_has_system_and_user_with_placeholders() -> None:
    p = load_prompt("yesno")
    assert set(p) == {"system", "user"}
    for field in ("{query}", "{path}", "{snippet}"):
        assert field in p["user"]
    assert "Is this snippet relevant to answering the question? Answer Yes or No." in p["user"]
    assert "Yes or No" in p["system"]
    assert not any(line.startswith("#") for line in p["user"].splitlines())
    filled = p["user"].format_map({"query": "q", "path": "a.py", "lines": "1-2", "snippet": "{x}"})
    assert "{x}" in filled  # braces inside a snippet are left alone


def test_select_prompt_file_has_candidate_block() -> None:
    p = load_prompt("select")
    assert set(p) == {"system", "user", "candidate"}
    for field in ("{query}", "{candidates}", "{k}"):
        assert field in p["user"]
    assert "comma separated" in p["user"]
    for field in ("{number}", "{path}", "{snippet}"):
        assert field in p["candidate"]


def test_truncate_snippet() -> None:
    assert truncate_snippet("short", 10) == "short"
    text = "line one\nline two\nline three"
    assert truncate_snippet(text, 20) == "line one\nline two\n..."  # cut at the line break
    assert truncate_snippet("x" * 30, 10) == "x" * 10 + "\n..."  # no line break to use
    assert truncate_snippet("a\n" + "b" * 30, 10) == "a\nbbbbbbbb\n..."  # break too early


def test_candidates_of_cuts_and_counts_unknown_ids() -> None:
    corpus = corpus_of([chunk(c) for c in "abcd"])
    run = input_run({"q": ["a", "ghost", "b", "c", "d"]})
    chunks, unknown = candidates_of(run, "q", corpus, 3)
    assert [c.id for c in chunks] == ["a", "b"]
    assert unknown == 1
    assert candidates_of(run, "other", corpus, 3) == ([], 0)


def test_stable_scores_keep_the_given_order_among_ties() -> None:
    ordered = [("z", 1.0), ("m", 1.0), ("a", 1.0), ("y", 0.5), ("b", 0.0), ("c", 0.0)]
    scores = stable_scores(ordered)
    assert Run("r", {"q": scores}).ids("q") == ["z", "m", "a", "y", "b", "c"]
    assert scores["a"] == 1.0 and scores["y"] == 0.5 and scores["c"] == 0.0  # last of a tie
    assert scores["z"] == pytest.approx(1.0, abs=1e-12)
    assert scores["b"] == pytest.approx(0.0, abs=1e-300)


def test_stable_scores_leave_distinct_scores_alone() -> None:
    ordered = [("a", 0.9), ("b", 0.7), ("c", 0.2)]
    assert stable_scores(ordered) == dict(ordered)
    # a score only one ulp above the next still orders as given
    tight = [("b", math.nextafter(0.5, 1.0)), ("a", 0.5), ("c", 0.5)]
    assert Run("r", {"q": stable_scores(tight)}).ids("q") == ["b", "a", "c"]
    assert stable_scores([]) == {}


@pytest.mark.parametrize("value", [0, -3, True])
def test_positive_ints_rejects_bad_values(value: int) -> None:
    with pytest.raises(ConfigError, match="llm-yesno: max_candidates must be a positive"):
        positive_ints("llm-yesno", max_candidates=value)
    positive_ints("llm-yesno", max_candidates=None, group_size=2)

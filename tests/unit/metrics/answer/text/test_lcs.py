"""LCS helpers: bit-parallel length against the textbook table, read-back, Lin's union example."""

from __future__ import annotations

import random

import pytest

from retrieval_bench.metrics.answer.text.lcs import lcs_length, lcs_positions, union_lcs_hits


def w(text: str) -> list[str]:
    return text.split()


def _table_lcs(a: list[str], b: list[str]) -> int:
    """Textbook O(len(a) * len(b)) dynamic programme."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@pytest.mark.parametrize(
    ("a", "b", "length"),
    [
        ("", "", 0),
        ("a", "", 0),
        ("a b c", "a b c", 3),
        ("a b c d", "b d", 2),
        ("a b c b d a b", "b d c a b a", 4),  # CLRS: "b c b a"
        ("x y z", "a b c", 0),
        ("a a a", "a", 1),
    ],
)
def test_lcs_length_hand_cases(a: str, b: str, length: int) -> None:
    assert lcs_length(a.split(), b.split()) == length
    assert lcs_length(b.split(), a.split()) == length


def test_lcs_length_matches_the_table_on_random_sequences() -> None:
    rng = random.Random(7)
    for _ in range(500):
        alphabet = "abcde"[: rng.randint(1, 5)]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 90))]  # > 64 bits too
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 90))]
        assert lcs_length(a, b) == _table_lcs(a, b)


def test_lcs_positions_is_an_lcs_and_takes_rouge_scores_path() -> None:
    a, b = w("a b c b d a b"), w("b d c a b a")
    positions = lcs_positions(a, b)
    assert len(positions) == 4 and positions == sorted(positions)
    # read-back from the end: match when equal, else step in b only when strictly better
    assert positions == [1, 2, 3, 5]  # "b c b a", the CLRS answer
    # tie at (2, 2): LCS(x y, y) = LCS(x, y x) = 1 -> step back in a, then match "x"
    assert lcs_positions(["x", "y"], ["y", "x"]) == [0]
    assert lcs_positions([], ["a"]) == []


def test_lcs_positions_equal_rouge_scores_read_back_on_random_sequences() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    rng = random.Random(11)
    for _ in range(300):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 25))]
        assert lcs_positions(a, b) == rouge_scorer.lcs_ind(a, b)


def test_union_lcs_lin_2004_example() -> None:
    # Lin 2004 §3.2: r = w1..w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5
    # LCS(r, c1) = w1 w2; LCS(r, c2) = w1 w3 w5; union = w1 w2 w3 w5 -> 4 hits
    r = [w("w1 w2 w3 w4 w5")]
    c = [w("w1 w2 w6 w7 w8"), w("w1 w3 w8 w9 w5")]
    assert union_lcs_hits(r, c) == 4


def test_union_lcs_counts_a_token_at_most_as_often_as_it_occurs() -> None:
    # both reference sentences' LCS with the candidate is "a"; the candidate has one "a"
    assert union_lcs_hits([["a"], ["a"]], [["a", "b"]]) == 1
    assert union_lcs_hits([["a"], ["a"]], [["a"], ["a"]]) == 2

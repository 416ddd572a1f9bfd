"""The three partial-matching cases through the real all-MiniLM-L6-v2
(docs/metrics.md#code-suggestion-similarity).

The same (prediction, reference) pairs as the unit tests, with the packaged
model the metrics load by default (nothing downloaded). Measured on this
model (lines / statements):

===============================  ======  ===============  ==================
case                             cosine  cross_similarity  raw formula
===============================  ======  ===============  ==================
continues into next function     0.923   1.000 / 1.000     1.021 (unclipped)
shorter near-perfect (6 of 12)   0.902   0.878 / 0.878     0.796
reference padded with logging    0.886   0.912 / 0.936     0.819
unrelated function (control)     0.140   0.000 / 0.000     0.956
===============================  ======  ===============  ==================

What is asserted: cross-similarity stays at or above 0.85 in all three cases;
it beats cosine where the blocks differ by extra code (cases 1 and 3); for
a half-length prefix MiniLM's whole-block cosine holds up too, and the
formula's own (1 − 1/k)/(1 − 1/n) ≈ 0.91 for a perfect k-of-n prefix caps
cross-similarity near it, so there it only has to stay within 0.05 of
cosine. The control shows why the noise floor exists: the raw formula
cannot tell an unrelated function from a match.
"""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.metrics.answer.code_similarity import CosineSimilarity, CrossSimilarity
from tests.unit.metrics.answer.test_code_similarity import REFERENCE, SEED_CASES, UNRELATED

pytestmark = pytest.mark.integration

LEVEL = 0.85
CASES = {**SEED_CASES, "unrelated": (UNRELATED, REFERENCE), "identical": (REFERENCE, REFERENCE)}


@pytest.fixture(scope="module")
def scores() -> dict[str, dict[str, float]]:
    samples = [Sample(p, (r,), meta={"language": "python"}) for p, r in CASES.values()]
    metrics = {
        "cosine": CosineSimilarity(),  # the default: packaged MiniLM, loaded once
        "cross_lines": CrossSimilarity(by="lines"),
        "cross_statements": CrossSimilarity(by="statements"),
        "raw_formula": CrossSimilarity(floor=None, clip=False),
    }
    table: dict[str, dict[str, float]] = {case: {} for case in CASES}
    for name, metric in metrics.items():
        for case, score in zip(CASES, metric.score_samples(samples), strict=True):
            assert score.value is not None, score.error
            table[case][name] = score.value
    print()
    print(f"{'case':32s}" + "".join(f"{n:>18s}" for n in metrics))
    for case, row in table.items():
        print(f"{case:32s}" + "".join(f"{row[n]:18.3f}" for n in metrics))
    return table


@pytest.mark.parametrize("case", list(SEED_CASES))
def test_cross_similarity_holds_in_the_seed_cases(
    scores: dict[str, dict[str, float]], case: str
) -> None:
    row = scores[case]
    assert row["cross_lines"] >= LEVEL, row
    assert row["cross_statements"] >= LEVEL, row
    assert row["cosine"] < 0.93, row  # the whole-block score does drop


@pytest.mark.parametrize("case", ["continues_into_next_function", "reference_padded_with_logging"])
def test_cross_similarity_drops_less_than_cosine(
    scores: dict[str, dict[str, float]], case: str
) -> None:
    row = scores[case]
    assert row["cross_lines"] > row["cosine"], row
    assert row["cross_statements"] > row["cosine"], row


def test_a_shorter_prefix_stays_near_cosine(scores: dict[str, dict[str, float]]) -> None:
    row = scores["shorter_near_perfect"]
    assert row["cross_lines"] >= row["cosine"] - 0.05, row


def test_unrelated_code_is_told_apart_only_with_the_floor(
    scores: dict[str, dict[str, float]],
) -> None:
    row = scores["unrelated"]
    assert row["cross_lines"] <= 0.1 and row["cross_statements"] <= 0.1, row
    assert row["cosine"] < 0.3, row
    assert row["raw_formula"] > 0.5, row  # raw formula on raw cosines: the noise wins


def test_identical_code_scores_one(scores: dict[str, dict[str, float]]) -> None:
    assert set(scores["identical"].values()) == {1.0}

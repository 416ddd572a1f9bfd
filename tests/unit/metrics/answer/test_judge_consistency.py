"""Judge consistency report and Fleiss' kappa, against hand-computed numbers."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.llm.base import ChatRequest, LLMUnavailableError
from retrieval_bench.metrics.answer.judge import LLMJudge
from retrieval_bench.metrics.answer.judge_consistency import consistency, fleiss_kappa
from tests.fakes.llm import ScriptedLLM, last_user

# Fleiss' kappa worked example (Wikipedia "Fleiss' kappa", after Fleiss 1971):
# 10 subjects, 14 raters, 5 categories; P̄ = 0.378, P̄e = 0.213, κ = 0.210.
TEXTBOOK = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_textbook_example() -> None:
    # P̄ = Σ_i (Σ_j n_ij² − 14) / (14·13) / 10 = 172/455;  p = column sums / 140;
    # P̄e = Σ p_j² = 417/1960;  κ = (P̄ − P̄e) / (1 − P̄e) = 4211/20059.
    p_bar = Fraction(sum(sum(c * c for c in row) - 14 for row in TEXTBOOK), 14 * 13 * 10)
    assert p_bar == Fraction(172, 455)
    p_e = sum(Fraction(sum(row[j] for row in TEXTBOOK), 140) ** 2 for j in range(5))
    assert p_e == Fraction(417, 1960)
    assert (p_bar - p_e) / (1 - p_e) == Fraction(4211, 20059)
    kappa = fleiss_kappa(TEXTBOOK)
    assert kappa is not None and kappa == pytest.approx(4211 / 20059, abs=1e-12)
    assert round(kappa, 3) == 0.210


def test_fleiss_kappa_edges() -> None:
    assert fleiss_kappa([[3, 0], [0, 3]]) == pytest.approx(1.0)  # perfect, categories vary
    # two raters who always disagree on a 50/50 mix: P̄ = 0, P̄e = 1/2, κ = -1
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    assert fleiss_kappa([[4, 0], [4, 0]]) is None  # one category only: P̄e = 1, undefined
    assert fleiss_kappa([[1, 0], [0, 1]]) is None  # no subject with two ratings
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="non-negative"):
        fleiss_kappa([[3, -1]])


# 3 samples x 4 repeats. Scripted answers by (prediction, repeat):
#   a: 4 4 4 4               -> 0.8 x4
#   b: 5 3 5 3               -> 1.0 0.6 1.0 0.6
#   c: 2 2 <no score> <fail> -> 0.4 0.4 None None
SCRIPT: dict[str, list[str | Exception]] = {
    "a": ["4", "4", "Rating: 4", "**4**"],
    "b": ["5", "3", "5/5", "3."],
    "c": ["2", "2 - partial", "cannot tell", LLMUnavailableError("server gone")],
}


def scripted() -> ScriptedLLM:
    def reply(req: ChatRequest) -> str | Exception:
        return SCRIPT[last_user(req)][req.repeat]

    return ScriptedLLM(reply)


def samples() -> list[Sample]:
    return [Sample(p, ("ref",), "q?", id=f"s-{p}") for p in SCRIPT]


def test_consistency_report_numbers_by_hand() -> None:
    llm = scripted()
    report = consistency(LLMJudge(llm=llm, template="{prediction}"), samples(), repeats=4)
    a, b, c = report.samples
    assert [s.id for s in report.samples] == ["s-a", "s-b", "s-c"]

    assert a.values == (0.8, 0.8, 0.8, 0.8)
    assert (a.mean, a.variance, a.mode, a.modal_agreement, a.pairwise_agreement) == (
        pytest.approx(0.8),
        pytest.approx(0.0),
        0.8,
        1.0,
        1.0,
    )
    assert a.unanimous and a.missing == 0

    assert b.values == (1.0, 0.6, 1.0, 0.6)
    assert b.mean == pytest.approx(0.8)
    assert b.variance == pytest.approx(0.04)  # every value 0.2 from the mean
    assert b.mode == 0.6  # a tie: the smaller value
    assert b.modal_agreement == 0.5
    assert b.pairwise_agreement == pytest.approx(1 / 3)  # (2·1 + 2·1) / (4·3)
    assert not b.unanimous

    assert c.values == (0.4, 0.4, None, None)
    assert (c.mean, c.variance, c.modal_agreement, c.pairwise_agreement) == (
        pytest.approx(0.4),
        0.0,
        1.0,
        1.0,
    )
    assert c.unanimous and c.missing == 2
    assert c.errors == (
        "judge answered with no score: 'cannot tell'",
        "LLM call failed: server gone",
    )

    assert report.categories == (0.4, 0.6, 0.8, 1.0)
    assert report.pairwise_agreement == pytest.approx(7 / 9)  # (1 + 1/3 + 1) / 3
    assert report.modal_agreement == pytest.approx(5 / 6)  # (1 + 0.5 + 1) / 3
    assert report.unanimous_share == pytest.approx(2 / 3)
    assert report.mean_variance == pytest.approx(0.04 / 3)
    assert report.missing == 2
    # table a [0,0,4,0], b [0,2,0,2], c [2,0,0,0]; p = (.2,.2,.4,.2), P̄e = .28;
    # κ = (7/9 − 7/25) / (1 − 7/25) = 56/81
    assert report.fleiss_kappa == pytest.approx(56 / 81)


def test_repeats_are_distinct_requests_at_the_given_temperature() -> None:
    llm = scripted()
    judge = LLMJudge(llm=llm, template="{prediction}", max_tokens=4)
    consistency(judge, samples(), repeats=4, temperature=0.9)
    assert len(llm.requests) == 12
    assert {(r.temperature, r.max_tokens) for r in llm.requests} == {(0.9, 4)}
    assert [r.repeat for r in llm.requests] == [0, 1, 2, 3] * 3
    # no two identical requests: each repeat is its own cache key
    assert len({(last_user(r), r.repeat) for r in llm.requests}) == 12


def test_all_same_answers_means_undefined_kappa() -> None:
    report = consistency(LLMJudge(llm=ScriptedLLM("3"), template="{prediction}"), samples(), 3)
    assert report.pairwise_agreement == 1.0 and report.unanimous_share == 1.0
    assert report.mean_variance == 0.0 and report.fleiss_kappa is None
    assert report.categories == (0.6,)


def test_every_repeat_failing_is_reported_not_raised() -> None:
    judge = LLMJudge(
        llm=ScriptedLLM(lambda _r: LLMUnavailableError("down")), template="{prediction}"
    )
    report = consistency(judge, samples()[:2], repeats=2)
    assert report.missing == 4
    assert report.pairwise_agreement is None and report.fleiss_kappa is None
    assert report.modal_agreement is None and report.unanimous_share is None
    assert all(not s.unanimous and s.mean is None for s in report.samples)
    assert "missing             4/4" in report.format()
    many = consistency(judge, [Sample(str(i)) for i in range(6)], repeats=2)
    listed = many.format().split("missing repeats:\n")[1].splitlines()
    assert len(listed) == 11 and listed[0] == "  #1 repeat 1: LLM call failed: down"
    assert listed[-1] == "  ... and 2 more"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"repeats": 1}, "repeats"),
        ({"repeats": True}, "repeats"),
        ({"temperature": -1.0}, "temperature"),
    ],
)
def test_bad_arguments(kw: dict[str, object], message: str) -> None:
    judge = LLMJudge(llm=ScriptedLLM("4"), template="{prediction}")
    with pytest.raises(ValueError, match=message):
        consistency(judge, samples(), **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no samples"):
        consistency(judge, [])


def test_format_and_as_dict() -> None:
    report = consistency(LLMJudge(llm=scripted(), template="{prediction}"), samples(), repeats=4)
    text = report.format()
    lines = text.splitlines()
    assert lines[0] == "judge consistency: llm_judge, 3 samples x 4 repeats, temperature 0.7"
    header, rule, row_a, row_b, row_c = lines[1:6]
    assert header.split() == [
        "sample",
        "values",
        "mean",
        "variance",
        "modal",
        "pairwise",
        "unanimous",
    ]
    assert row_c.split() == [
        "s-c",
        "0.4",
        "0.4",
        "-",
        "-",
        "0.400",
        "0.0000",
        "1.00",
        "1.00",
        "yes",
    ]
    assert row_b.split()[-3:] == ["0.50", "0.33", "no"]
    # columns line up: every numeric column ends at the header's column end
    end = header.index("pairwise") + len("pairwise")
    assert all(row[end - 4 : end] in ("1.00", "0.33") for row in (row_a, row_b, row_c))
    assert len(rule) == len(header)
    assert "pairwise agreement  0.778" in text
    assert "Fleiss' kappa       0.691 (4 categories: 0.4 0.6 0.8 1)" in text
    assert "unanimous           2/3 (0.667)" in text

    assert lines[-3:] == [
        "missing repeats:",
        "  s-c repeat 3: judge answered with no score: 'cannot tell'",
        "  s-c repeat 4: LLM call failed: server gone",
    ]

    data = json.loads(json.dumps(report.as_dict()))
    assert data["n_samples"] == 3 and data["repeats"] == 4 and data["missing"] == 2
    assert data["fleiss_kappa"] == pytest.approx(56 / 81)
    assert data["samples"][2]["values"] == [0.4, 0.4, None, None]
    assert data["samples"][2]["errors"][1] == "LLM call failed: server gone"

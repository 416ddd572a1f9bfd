"""Differential test: BLEU equals sacrebleu and ROUGE equals rouge-score to 1e-9 on the corpus.

The corpus (:mod:`.corpus`) holds >= 300 seeded pairs from the fixture
repositories' reference answers plus perturbations and edge cases. The unit
test runs a covering set of 8 BLEU configurations (every smoothing meets both
tokenize, lowercase and order levels); ``benchmarks/agreement/text_metrics.py``
runs all 32 and prints the table.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.unit.metrics.answer.text.corpus import TextPair, build_corpus

pytest.importorskip("sacrebleu")
pytest.importorskip("rouge_score")

from tests.unit.metrics.answer.text import agreement  # noqa: E402 (after the skips)


@pytest.fixture(scope="module")
def corpus() -> list[TextPair]:
    return build_corpus()


def test_corpus_is_large_varied_and_deterministic(corpus: list[TextPair]) -> None:
    assert len(corpus) >= 300
    kinds = Counter(p.kind for p in corpus)
    assert {"identity", "drop", "swap", "substitute", "code", "lines", "edge"} <= set(kinds)
    assert kinds["multi-reference"] >= 30
    assert any("\n" in p.prediction for p in corpus)
    assert any(not p.prediction for p in corpus) and any("" in p.references for p in corpus)
    assert corpus == build_corpus()
    assert corpus != build_corpus(seed=14)


def _assert_all_pass(results: list[agreement.CheckResult]) -> None:
    failed = [f"{r.name}: max diff {r.max_abs_diff:.3g}" for r in results if not r.passed]
    assert not failed, failed
    assert all(r.tolerance == 1e-9 and r.pairs > 0 for r in results)


def test_13a_tokens_equal_sacrebleu(corpus: list[TextPair]) -> None:
    result = agreement.check_tokenizer(corpus)
    assert result.pairs > 700
    _assert_all_pass([result])


def test_sentence_bleu_equals_sacrebleu(corpus: list[TextPair]) -> None:
    results = agreement.check_sentence_bleu(corpus, full=False)
    assert len(results) == 8 + 4
    _assert_all_pass(results)


def test_corpus_bleu_equals_sacrebleu(corpus: list[TextPair]) -> None:
    results = agreement.check_corpus_bleu(corpus, full=False)
    assert len(results) == 8 and all(r.pairs == 15 for r in results)
    _assert_all_pass(results)


def test_rouge_equals_rouge_score(corpus: list[TextPair]) -> None:
    results = agreement.check_rouge(corpus)
    assert len(results) == 4 * 3 * 2
    _assert_all_pass(results)


def test_a_wrong_metric_would_fail_the_check(corpus: list[TextPair]) -> None:
    """The comparison can fail: ROUGE with the stemmer against rouge-score without it."""
    from rouge_score import rouge_scorer

    from retrieval_bench.metrics.answer.text.rouge import Rouge

    ours = Rouge(rouge_type="rouge1", use_stemmer=True)
    theirs = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)
    diffs = [
        abs(
            ours.scores(p.prediction, p.references).fmeasure
            - theirs.score_multi(list(p.references), p.prediction)["rouge1"].fmeasure
        )
        for p in corpus
        if p.references
    ]
    assert max(diffs) > agreement.TOLERANCE

"""Reference checks of our text metrics against sacrebleu and rouge-score, on one corpus.

Shared by the unit test (``test_reference_agreement.py``, which asserts every
check passes) and ``benchmarks/agreement/text_metrics.py`` (which prints the
table). Each check scores the corpus of :mod:`.corpus` with our metric and
the reference library and reports the largest and mean absolute difference,
on the 0..1 scale (sacrebleu's 0..100 divided by 100).

Checks: our 13a tokenizer against sacrebleu's ``Tokenizer13a`` (per string,
difference 1 when the token lists differ); sentence BLEU for every smoothing,
tokenize 13a/none, lowercase off/on and n-gram order 2/4 — all 32
combinations, or a covering set of 8 with ``full=False`` — plus
``effective_order=False``, the multi-reference samples alone and the
``sacrebleu.sentence_bleu`` function with its defaults; corpus BLEU over 15
sub-corpora of up to 50 samples (variable reference counts) for the same
configurations; ROUGE-1/2/L/Lsum precision, recall and F without and with the
Porter stemmer against ``RougeScorer.score_multi``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.metrics.answer.text.bleu import BLEU
from retrieval_bench.metrics.answer.text.rouge import Rouge
from retrieval_bench.metrics.answer.text.tokenize_13a import tokenize_13a
from tests.unit.metrics.answer.text.corpus import TextPair, build_corpus

TOLERANCE = 1e-9
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
SMOOTHING = ("none", "floor", "add-k", "exp")
CORPUS_CHUNK = 50


@dataclass(frozen=True)
class CheckResult:
    name: str
    pairs: int
    max_abs_diff: float
    mean_abs_diff: float
    tolerance: float = TOLERANCE

    @property
    def passed(self) -> bool:
        return self.max_abs_diff <= self.tolerance


def _result(name: str, ours: Sequence[float], theirs: Sequence[float]) -> CheckResult:
    diffs = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    return CheckResult(name, len(diffs), max(diffs), sum(diffs) / len(diffs))


def _samples(pairs: Sequence[TextPair]) -> list[Sample]:
    return [Sample(p.prediction, p.references) for p in pairs]


def check_tokenizer(pairs: Sequence[TextPair]) -> CheckResult:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    theirs = Tokenizer13a()
    texts = sorted({p.prediction for p in pairs} | {r for p in pairs for r in p.references})
    mismatches = [0.0 if tokenize_13a(t) == theirs(t).split() else 1.0 for t in texts]
    return _result("13a tokens == sacrebleu Tokenizer13a", mismatches, [0.0] * len(texts))


def _sentence_bleu_check(
    pairs: Sequence[TextPair],
    label: str,
    *,
    smoothing: str,
    tokenize: str,
    lowercase: bool,
    order: int,
    effective_order: bool = True,
) -> CheckResult:
    from sacrebleu.metrics import BLEU as SacreBLEU

    # sacrebleu logs a recommendation on every sentence scored without effective order
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    ours = BLEU(
        max_ngram_order=order,
        smoothing=smoothing,
        tokenize=tokenize,
        lowercase=lowercase,
        effective_order=effective_order,
    )
    theirs = SacreBLEU(
        smooth_method=smoothing,
        tokenize=tokenize,
        lowercase=lowercase,
        max_ngram_order=order,
        effective_order=effective_order,
    )
    mine = [ours.score(s).value or 0.0 for s in _samples(pairs)]
    ref = [theirs.sentence_score(p.prediction, list(p.references)).score / 100 for p in pairs]
    return _result(label, mine, ref)


def sentence_bleu_configs(full: bool) -> list[tuple[str, str, bool, int]]:
    """(smoothing, tokenize, lowercase, order) to check.

    ``full``: the whole 4 x 2 x 2 x 2 product. Otherwise 8 configurations in
    which every smoothing meets both levels of tokenize, lowercase and order,
    and those three run through all 8 combinations (the unit test's budget).
    """
    if full:
        return list(itertools.product(SMOOTHING, ("13a", "none"), (False, True), (4, 2)))
    return [
        ("none", "13a", False, 4),
        ("none", "none", True, 2),
        ("floor", "13a", True, 2),
        ("floor", "none", False, 4),
        ("add-k", "13a", False, 2),
        ("add-k", "none", True, 4),
        ("exp", "13a", True, 4),
        ("exp", "none", False, 2),
    ]


def check_sentence_bleu(pairs: Sequence[TextPair], *, full: bool = True) -> list[CheckResult]:
    import sacrebleu

    results = []
    for smoothing, tokenize, lowercase, order in sentence_bleu_configs(full):
        label = f"sentence BLEU smooth={smoothing} tok={tokenize} lc={lowercase} N={order}"
        results.append(
            _sentence_bleu_check(
                pairs,
                label,
                smoothing=smoothing,
                tokenize=tokenize,
                lowercase=lowercase,
                order=order,
            )
        )
    for smoothing in ("none", "exp"):
        label = f"sentence BLEU smooth={smoothing} effective_order=False"
        results.append(
            _sentence_bleu_check(
                pairs,
                label,
                smoothing=smoothing,
                tokenize="13a",
                lowercase=False,
                order=4,
                effective_order=False,
            )
        )
    multi = [p for p in pairs if len(p.references) > 1]
    results.append(
        _sentence_bleu_check(
            multi,
            "sentence BLEU multi-reference only (exp, 13a)",
            smoothing="exp",
            tokenize="13a",
            lowercase=False,
            order=4,
        )
    )
    default = BLEU()
    mine = [default.score(s).value or 0.0 for s in _samples(pairs)]
    ref = [sacrebleu.sentence_bleu(p.prediction, list(p.references)).score / 100 for p in pairs]
    results.append(_result("BLEU() vs sacrebleu.sentence_bleu defaults", mine, ref))
    return results


def _reference_streams(pairs: Sequence[TextPair]) -> list[list[str | None]]:
    """sacrebleu's layout: stream k holds every sample's k-th reference (None if it has none)."""
    width = max(len(p.references) for p in pairs)
    return [
        [p.references[k] if k < len(p.references) else None for p in pairs] for k in range(width)
    ]


def check_corpus_bleu(pairs: Sequence[TextPair], *, full: bool = True) -> list[CheckResult]:
    import sacrebleu

    chunks = [pairs[i : i + CORPUS_CHUNK] for i in range(0, len(pairs), CORPUS_CHUNK)]
    results = []
    configs = sentence_bleu_configs(full)
    for smoothing, tokenize, lowercase, order in configs:
        ours = BLEU(
            max_ngram_order=order, smoothing=smoothing, tokenize=tokenize, lowercase=lowercase
        )
        theirs = sacrebleu.BLEU(
            smooth_method=smoothing, tokenize=tokenize, lowercase=lowercase, max_ngram_order=order
        )
        mine = [ours.corpus_score(_samples(chunk)) for chunk in chunks]
        ref = [
            theirs.corpus_score([p.prediction for p in c], _reference_streams(c)).score / 100
            for c in chunks
        ]
        label = f"corpus BLEU smooth={smoothing} tok={tokenize} lc={lowercase} N={order}"
        results.append(_result(label + f" ({len(chunks)} corpora)", mine, ref))
    return results


def check_rouge(pairs: Sequence[TextPair]) -> list[CheckResult]:
    from rouge_score import rouge_scorer

    results = []
    for use_stemmer in (False, True):
        scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)
        reference = [scorer.score_multi(list(p.references) or [""], p.prediction) for p in pairs]
        for rouge_type in ROUGE_TYPES:
            metric = Rouge(rouge_type=rouge_type, use_stemmer=use_stemmer)
            ours = [metric.scores(p.prediction, p.references) for p in pairs]
            fields: list[tuple[str, Callable[..., float]]] = [
                ("P", lambda s: s.precision),
                ("R", lambda s: s.recall),
                ("F", lambda s: s.fmeasure),
            ]
            for measure, get in fields:
                results.append(
                    _result(
                        f"{rouge_type} {measure} stemmer={use_stemmer}",
                        [get(s) for s in ours],
                        [get(r[rouge_type]) for r in reference],
                    )
                )
    return results


def all_checks(pairs: Sequence[TextPair] | None = None, *, full: bool = True) -> list[CheckResult]:
    """Every reference check on ``pairs`` (default: :func:`build_corpus`)."""
    pairs = build_corpus() if pairs is None else pairs
    return [
        check_tokenizer(pairs),
        *check_sentence_bleu(pairs, full=full),
        *check_corpus_bleu(pairs, full=full),
        *check_rouge(pairs),
    ]

"""``token_f1``: SQuAD-style token overlap F1 (docs/metrics.md#text-metrics).

After the same normalisation as exact match
(:mod:`retrieval_bench.metrics.answer.text.normalize`) both texts are split on
whitespace and compared as *multisets* of tokens (Rajpurkar et al., EMNLP
2016, SQuAD v1.1 evaluation script)::

    common    = Σ_t min(count_pred(t), count_ref(t))
    precision = common / |pred|,  recall = common / |ref|
    F1        = 2·P·R / (P + R)              (0 when common = 0)

A *set* intersection (Ruby's array ``&``, as in the first design's sketch)
would count a repeated token once: "the cat the" against "the the dog" would
share one token instead of two. That is a bug; this module counts with
``collections.Counter``.

Edge cases (SQuAD v2.0 convention): both token lists empty → 1.0, exactly one
empty → 0.0; with no reference the prediction is compared with "". Several
references: the best F1 counts, and its precision and recall go in
``Score.details``.
"""

from __future__ import annotations

from collections import Counter

from retrieval_bench.contracts.answer_metric import Sample, Score
from retrieval_bench.metrics.answer.text.normalize import NormalisedTextMetric, sample_texts

_NO_REFERENCE = ("",)


def token_prf(predicted: list[str], reference: list[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of two token lists with multiset overlap (module docstring)."""
    if not predicted or not reference:
        both_empty = 1.0 if not predicted and not reference else 0.0
        return both_empty, both_empty, both_empty
    reference_counts = Counter(reference)
    common = 0
    for token, count in Counter(predicted).items():
        available = reference_counts.get(token)
        if available:
            common += count if count < available else available
    if common == 0:
        return 0.0, 0.0, 0.0
    precision = common / len(predicted)
    recall = common / len(reference)
    return precision, recall, 2 * precision * recall / (precision + recall)


class TokenF1(NormalisedTextMetric):
    """Token F1 after normalisation; options as :class:`~.exact_match.ExactMatch`
    (:class:`~retrieval_bench.metrics.answer.text.normalize.NormalisedTextMetric`;
    ``squad=True`` gives the SQuAD v1.1 F1).

    Case is ignored by default (SQuAD lowercases too); pass
    ``ignore_case=False`` for a case-sensitive overlap.
    """

    description = "token-overlap F1 (multiset) of prediction and reference"
    name = "token_f1"

    class Params(NormalisedTextMetric.Params):
        ignore_case: bool = True

    params: TokenF1.Params

    def score(self, sample: Sample) -> Score:
        prediction, references = sample_texts(sample, self.name)
        tokens = self.normalizer.tokens
        predicted = tokens(prediction)
        best: tuple[float, float, float] | None = None
        for reference in references or _NO_REFERENCE:
            prf = token_prf(predicted, tokens(reference))
            if best is None or prf[2] > best[2]:
                best = prf
        assert best is not None
        precision, recall, f1 = best
        return Score(f1, details={"precision": precision, "recall": recall})

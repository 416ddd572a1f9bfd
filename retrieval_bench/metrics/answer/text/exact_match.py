"""``exact_match``: 1.0 when the normalised prediction equals a normalised reference.

Options ignore case, ignore punctuation, normalise whitespace
(docs/metrics.md#text-metrics) plus ``strip`` and the ``squad=True`` preset —
the SQuAD v1.1 ``normalize_answer`` (Rajpurkar et al., EMNLP 2016): lowercase,
delete punctuation, drop the articles a/an/the, collapse whitespace.
Normalisation details, including what counts as punctuation, are in
:mod:`retrieval_bench.metrics.answer.text.normalize`.

With several references the best match counts (1.0 if any reference matches).
A sample with no reference is compared with the empty string, as the SQuAD
v2.0 evaluation script does for unanswerable questions, so an empty
prediction then scores 1.0 and any other 0.0.
"""

from __future__ import annotations

from retrieval_bench.contracts.answer_metric import Sample, Score
from retrieval_bench.metrics.answer.text.normalize import NormalisedTextMetric, sample_texts

_NO_REFERENCE = ("",)


class ExactMatch(NormalisedTextMetric):
    """Exact match after normalisation; 1.0 or 0.0.

    Parameters (``Params``): ``ignore_case``, ``ignore_punctuation``,
    ``normalize_whitespace``, ``strip``, ``remove_articles``, ``squad``; keyword
    ``name``; see :class:`~retrieval_bench.metrics.answer.text.normalize.NormalisedTextMetric`.
    """

    description = "exact match of normalised prediction and reference"
    name = "exact_match"

    def score(self, sample: Sample) -> Score:
        prediction, references = sample_texts(sample, self.name)
        normalize = self.normalizer
        predicted = normalize(prediction)
        for reference in references or _NO_REFERENCE:
            if normalize(reference) == predicted:
                return Score(1.0)
        return Score(0.0)

"""``exact_match``: 1.0 when the normalised prediction equals a normalised reference (SPEC §3.2).

Seed 004 ``ExactMatch`` (options ignore case, ignore punctuation, normalise
whitespace) plus ``strip`` and the ``squad=True`` preset — the SQuAD v1.1
``normalize_answer`` (Rajpurkar et al., EMNLP 2016): lowercase, delete
punctuation, drop the articles a/an/the, collapse whitespace. Normalisation
details, including what counts as punctuation, are in
:mod:`retrieval_bench.metrics.text.normalize`.

With several references the best match counts (1.0 if any reference matches).
A sample with no reference is compared with the empty string, as the SQuAD
v2.0 evaluation script does for unanswerable questions, so an empty
prediction then scores 1.0 and any other 0.0.
"""

from __future__ import annotations

from retrieval_bench.metrics.base import MetricBase, Sample, Score
from retrieval_bench.metrics.text.normalize import normalizer_from_options, sample_texts
from retrieval_bench.registry import register

_NO_REFERENCE = ("",)


@register("metrics", "exact_match")
class ExactMatch(MetricBase):
    """Exact match after normalisation; 1.0 or 0.0.

    Parameters:
        ignore_case: compare lowercased text.
        ignore_punctuation: delete punctuation (ASCII and Unicode ``P*``) first.
        normalize_whitespace: collapse whitespace runs to one space.
        strip: ignore leading/trailing whitespace.
        remove_articles: drop the words a/an/the.
        squad: the SQuAD v1.1 preset; turns on case, punctuation and article
            removal (cannot be combined with ``normalize_whitespace=False`` or
            ``strip=False``).
        name: the metric's label in results.
    """

    description = "exact match of normalised prediction and reference"

    def __init__(
        self,
        *,
        ignore_case: bool = False,
        ignore_punctuation: bool = False,
        normalize_whitespace: bool = True,
        strip: bool = True,
        remove_articles: bool = False,
        squad: bool = False,
        name: str = "exact_match",
    ) -> None:
        self.name = name
        self.normalizer = normalizer_from_options(
            name,
            ignore_case=ignore_case,
            ignore_punctuation=ignore_punctuation,
            normalize_whitespace=normalize_whitespace,
            strip=strip,
            remove_articles=remove_articles,
            squad=squad,
        )

    def score(self, sample: Sample) -> Score:
        prediction, references = sample_texts(sample, self.name)
        normalize = self.normalizer
        predicted = normalize(prediction)
        for reference in references or _NO_REFERENCE:
            if normalize(reference) == predicted:
                return Score(1.0)
        return Score(0.0)

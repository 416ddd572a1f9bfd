"""``bleu``: sentence and corpus BLEU on a 0..1 scale (docs/metrics.md#text-metrics).

Papineni, Roukos, Ward & Zhu, "BLEU: a Method for Automatic Evaluation of
Machine Translation", ACL 2002. For n = 1..N (``max_ngram_order``, default 4)::

    p_n  = Σ_g min(count_hyp(g), max_r count_r(g)) / Σ_g count_hyp(g)   (n-grams g)
    BP   = 1 if c >= r else exp(1 - r / c)      (0 when c = 0)
    BLEU = BP · exp( (1/N') Σ_{n<=N'} log p_n )

with c the hypothesis length and r the reference length closest to it (ties
go to the shorter reference). Clipping uses, for each n-gram, its largest
count in any one reference, so every reference counts.

Smoothing — Chen & Cherry, "A Systematic Comparison of Smoothing Techniques
for Sentence-Level BLEU", WMT 2014, under sacrebleu's names:

* ``none``  — no smoothing: any p_n = 0 makes BLEU 0;
* ``floor`` — method 1: a p_n with no match becomes ``smooth_value`` / total_n
  (default 0.1);
* ``add-k`` — method 2: add ``smooth_value`` (default 1) to the matches and
  totals of every order n >= 2;
* ``exp``   — method 3 (NIST, mteval-v13a): the k-th order with no match gets
  p_n = 1 / (2^k · total_n). This is the default, as in sacrebleu.

``effective_order`` (default True, for sentences): N' is the highest order
the hypothesis has any n-gram of (a 2-word answer is scored on 1- and 2-grams
instead of scoring 0); otherwise N' = N. If no n-gram of any order matches,
BLEU is 0 whatever the smoothing. These rules reproduce sacrebleu 2.x's
``BLEU.compute_bleu``; sacrebleu reports 0..100, this module 0..1.

Preprocessing: optional lowercasing, trailing whitespace removed, then a
tokenizer — ``13a`` (:mod:`.tokenize_13a`, sacrebleu's default), ``none``
(split on whitespace) or ``code`` (identifier/number runs and single
punctuation characters: ``foo.bar(x)`` → ``foo . bar ( x )``, for code answers).
Token lists are memoised per text (the last 65,536 texts per tokenizer, like
sacrebleu's cache), since one reference is usually scored against many answers.

Edge cases (never an error): an empty hypothesis, an empty reference, or no
reference at all (treated as one empty reference) score 0.0 — no n-gram can
match. :meth:`BLEU.corpus_score` gives *corpus* BLEU: it sums the n-gram
matches, totals and lengths over all samples and applies one brevity penalty,
so it is **not** the mean of sentence BLEU scores.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

from pydantic import StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.normalize import sample_texts
from retrieval_bench.metrics.answer.text.tokenize_13a import tokenize_13a

_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize_code(text: str) -> list[str]:
    """Runs of word characters (identifiers, numbers) and single other non-space characters."""
    return _CODE_TOKEN.findall(text)


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "13a": tokenize_13a,
    "none": str.split,
    "code": tokenize_code,
}
_CACHE_SIZE = 1 << 16


def _memoised(tokenizer: Callable[[str], list[str]]) -> Callable[[str], tuple[str, ...]]:
    @functools.lru_cache(maxsize=_CACHE_SIZE)
    def tokens(text: str) -> tuple[str, ...]:
        return tuple(tokenizer(text))

    return tokens


_CACHED_TOKENIZERS = {name: _memoised(tokenizer) for name, tokenizer in TOKENIZERS.items()}


def clear_token_cache() -> None:
    """Forget memoised token lists (benchmarks start cold with this)."""
    for tokens in _CACHED_TOKENIZERS.values():
        tokens.cache_clear()  # type: ignore[attr-defined]


SMOOTHING_DEFAULTS: dict[str, float | None] = {
    "none": None,
    "floor": 0.1,
    "add-k": 1.0,
    "exp": None,
}
_NO_REFERENCE = ("",)


class BleuStatistics(NamedTuple):
    """Sufficient statistics of one sample (or, summed, of a corpus)."""

    hyp_len: int
    ref_len: int
    matches: tuple[int, ...]
    """Clipped n-gram matches for n = 1..N."""
    totals: tuple[int, ...]
    """Hypothesis n-gram counts for n = 1..N."""


class BleuResult(NamedTuple):
    score: float
    precisions: tuple[float, ...]
    brevity_penalty: float


def ngram_counts(tokens: Sequence[str], max_order: int) -> list[Counter[Hashable]]:
    """Counters of the 1..max_order-grams of ``tokens`` (unigrams as strings, longer as tuples)."""
    counts: list[Counter[Hashable]] = [Counter(tokens)]
    for n in range(2, max_order + 1):
        counts.append(Counter(zip(*[tokens[i:] for i in range(n)], strict=False)))
    return counts


def bleu_from_statistics(
    stats: BleuStatistics,
    *,
    smoothing: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = True,
) -> BleuResult:
    """BLEU (0..1), the n-gram precisions and the brevity penalty (module docstring)."""
    hyp_len, ref_len = stats.hyp_len, stats.ref_len
    max_order = len(stats.totals)
    if hyp_len >= ref_len:
        brevity_penalty = 1.0
    else:
        brevity_penalty = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    precisions = [0.0] * max_order
    if not any(stats.matches):
        return BleuResult(0.0, tuple(precisions), brevity_penalty)
    k = SMOOTHING_DEFAULTS[smoothing] if smooth_value is None else smooth_value
    orders = max_order
    halvings = 1.0
    for i in range(max_order):
        matched: float = stats.matches[i]
        total: float = stats.totals[i]
        if smoothing == "add-k" and i > 0:
            assert k is not None
            matched += k
            total += k
        if total == 0:
            break
        if effective_order:
            orders = i + 1
        if matched:
            precisions[i] = matched / total
        elif smoothing == "exp":
            halvings *= 2.0
            precisions[i] = 1.0 / (halvings * total)
        elif smoothing == "floor":
            assert k is not None
            precisions[i] = k / total
    used = precisions[:orders]
    if min(used) <= 0.0:
        return BleuResult(0.0, tuple(precisions), brevity_penalty)
    log_mean = math.fsum(math.log(p) for p in used) / orders
    return BleuResult(brevity_penalty * math.exp(log_mean), tuple(precisions), brevity_penalty)


class BLEU(MetricBase):
    """Sentence BLEU of a prediction against all its references, 0..1.

    Parameters (``Params``):
        max_ngram_order: N, the longest n-gram (4).
        smoothing: ``none`` | ``floor`` | ``add-k`` | ``exp`` (default, sacrebleu's).
        smooth_value: the floor (0.1) or k (1) of those methods; None = default.
        effective_order: score short hypotheses on the orders they have (True).
        tokenize: ``13a`` (default) | ``none`` | ``code``.
        lowercase: lowercase hypothesis and references first.

    ``name`` (keyword): the metric's label in results.
    """

    description = "sentence BLEU (Papineni et al. 2002), 0..1"

    class Params(StageParams):
        max_ngram_order: StrictInt = 4
        smoothing: str = "exp"
        smooth_value: float | None = None
        effective_order: bool = True
        tokenize: str = "13a"
        lowercase: bool = False

    params: BLEU.Params

    def __init__(
        self, params: BLEU.Params | None = None, /, *, name: str = "bleu", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        max_ngram_order, smoothing, smooth_value = p.max_ngram_order, p.smoothing, p.smooth_value
        if max_ngram_order < 1:
            raise ConfigError(
                f"{name}: max_ngram_order must be an integer >= 1, not {max_ngram_order!r}"
            )
        if smoothing not in SMOOTHING_DEFAULTS:
            raise ConfigError(
                f"{name}: unknown smoothing {smoothing!r}; choose one of "
                f"{', '.join(SMOOTHING_DEFAULTS)}"
            )
        if smooth_value is not None and not smooth_value > 0:
            raise ConfigError(f"{name}: smooth_value must be > 0, not {smooth_value}")
        if p.tokenize not in TOKENIZERS:
            raise ConfigError(
                f"{name}: unknown tokenize {p.tokenize!r}; choose one of {', '.join(TOKENIZERS)}"
            )
        self.name = name
        self.max_ngram_order = max_ngram_order
        self.smoothing = smoothing
        self.smooth_value = smooth_value
        self.effective_order = p.effective_order
        self.tokenize = p.tokenize
        self.lowercase = p.lowercase
        self._tokenizer = _CACHED_TOKENIZERS[p.tokenize]

    def tokens(self, text: str) -> tuple[str, ...]:
        """``text`` as BLEU sees it: lowercased if asked, right-stripped, tokenised."""
        if self.lowercase:
            text = text.lower()
        return self._tokenizer(text.rstrip())

    def statistics(self, prediction: str, references: Sequence[str]) -> BleuStatistics:
        """Clipped matches, totals and lengths of one prediction against its references."""
        max_order = self.max_ngram_order
        hyp = self.tokens(prediction)
        hyp_len = len(hyp)
        ref_counts: list[Counter[Hashable]] | None = None
        ref_len = -1
        for reference in references or _NO_REFERENCE:
            ref = self.tokens(reference)
            length = len(ref)
            if ref_len < 0 or (abs(hyp_len - length), length) < (abs(hyp_len - ref_len), ref_len):
                ref_len = length
            counts = ngram_counts(ref, max_order)
            if ref_counts is None:
                ref_counts = counts
            else:
                for merged, extra in zip(ref_counts, counts, strict=True):
                    merged |= extra
        assert ref_counts is not None
        matches = []
        for hyp_ngrams, ref_ngrams in zip(ngram_counts(hyp, max_order), ref_counts, strict=True):
            matched = 0
            for ngram, count in hyp_ngrams.items():
                available = ref_ngrams.get(ngram)
                if available:
                    matched += count if count < available else available
            matches.append(matched)
        totals = tuple(max(hyp_len - n, 0) for n in range(max_order))
        return BleuStatistics(hyp_len, ref_len, tuple(matches), totals)

    def score(self, sample: Sample) -> Score:
        prediction, references = sample_texts(sample, self.name)
        stats = self.statistics(prediction, references)
        result = bleu_from_statistics(
            stats,
            smoothing=self.smoothing,
            smooth_value=self.smooth_value,
            effective_order=self.effective_order,
        )
        details: dict[str, float | None] = {
            "brevity_penalty": result.brevity_penalty,
            "hyp_len": float(stats.hyp_len),
            "ref_len": float(stats.ref_len),
        }
        for n, precision in enumerate(result.precisions, start=1):
            details[f"precision_{n}"] = precision
        return Score(result.score, details=details)

    def corpus_score(self, samples: Sequence[Sample], *, effective_order: bool = False) -> float:
        """Corpus BLEU, 0..1: statistics summed over ``samples``, one brevity penalty.

        Not the mean of the sentence scores. ``effective_order`` defaults to
        False here, as in sacrebleu's ``corpus_bleu``. A non-string text raises
        TypeError (one corpus, one number: there is no missing value to record).
        An empty corpus scores 0.0.
        """
        max_order = self.max_ngram_order
        hyp_len = ref_len = 0
        matches = [0] * max_order
        totals = [0] * max_order
        for sample in samples:
            prediction, references = sample_texts(sample, self.name)
            stats = self.statistics(prediction, references)
            hyp_len += stats.hyp_len
            ref_len += stats.ref_len
            for i in range(max_order):
                matches[i] += stats.matches[i]
                totals[i] += stats.totals[i]
        corpus = BleuStatistics(hyp_len, ref_len, tuple(matches), tuple(totals))
        return bleu_from_statistics(
            corpus,
            smoothing=self.smoothing,
            smooth_value=self.smooth_value,
            effective_order=effective_order,
        ).score

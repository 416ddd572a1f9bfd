"""``rouge1`` / ``rouge2`` / ``rougeL`` / ``rougeLsum``, after Lin 2004
(docs/metrics.md#text-metrics).

Chin-Yew Lin, "ROUGE: A Package for Automatic Evaluation of Summaries", ACL
workshop Text Summarization Branches Out, 2004. Each variant gives a
precision P (over the prediction), a recall R (over the reference) and
F = 2PR / (P + R) (0 when P + R = 0); ``measure`` picks which one is the score
and all three go in ``Score.details``:

* ROUGE-N (§2): clipped n-gram overlap, P = overlap / #prediction n-grams,
  R = overlap / #reference n-grams;
* ROUGE-L (§3.1, sentence level): P = LCS / |prediction|, R = LCS / |reference|;
* ROUGE-Lsum (§3.2, summary level): both texts are split into sentences at
  newlines (empty lines dropped); hits = Σ over reference sentences of the
  size of the union of their LCS with every prediction sentence, each token
  counted at most as often as it occurs on both sides
  (:func:`.lcs.union_lcs_hits`); P = hits / |prediction|, R = hits / |reference|.

Tokenisation is rouge-score's default tokenizer: lowercase (``str.lower``),
every run of characters other than ``a-z0-9`` becomes a space, split. Letters
outside ASCII are therefore *dropped* — "café" gives the token "caf", and text
in Greek or Chinese gives no tokens at all — exactly as rouge-score does.
``use_stemmer=True`` applies NLTK's Porter stemmer to tokens longer than 3
characters, as rouge-score does (NLTK is imported only then; stems are cached).

Several references: the reference with the highest F wins (the first on
ties) and its P, R and F are reported — rouge-score's ``score_multi``. An
empty side (no tokens), or no reference, scores 0.0 on every measure.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, NamedTuple

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.lcs import lcs_length, union_lcs_hits
from retrieval_bench.metrics.answer.text.normalize import sample_texts

_NON_ALPHANUMERIC_RUN = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"[a-z0-9]+")
_ROUGE_N = re.compile(r"rouge([1-9])")
MEASURES = ("f", "precision", "recall")
_MEASURE_FIELDS = {"f": "fmeasure", "precision": "precision", "recall": "recall"}
_NO_REFERENCE = ("",)


class RougeScore(NamedTuple):
    precision: float
    recall: float
    fmeasure: float


_ZERO = RougeScore(0.0, 0.0, 0.0)


def _from_counts(hits: int, predicted: int, reference: int) -> RougeScore:
    """P, R, F from hits and the two sizes (a size of 0 counts as 1, as in rouge-score)."""
    precision = hits / (predicted or 1)
    recall = hits / (reference or 1)
    total = precision + recall
    return RougeScore(precision, recall, 2 * precision * recall / total if total > 0 else 0.0)


@functools.cache
def porter_stem() -> Callable[[str], str]:
    """NLTK's Porter stemmer (default NLTK_EXTENSIONS mode, as rouge-score uses), memoised."""
    from nltk.stem.porter import PorterStemmer

    return functools.lru_cache(maxsize=1 << 16)(PorterStemmer().stem)


def rouge_tokens(text: str, stem: Callable[[str], str] | None = None) -> list[str]:
    """rouge-score's default tokenisation of ``text`` (module docstring)."""
    tokens = _NON_ALPHANUMERIC_RUN.sub(" ", text.lower()).split()
    if stem is None:
        return tokens
    stemmed = [stem(token) if len(token) > 3 else token for token in tokens]
    return [token for token in stemmed if _VALID_TOKEN.fullmatch(token)]


# --- per-variant preparation (done once per text) and comparison --------------------------


def _ngrams(tokens: list[str], n: int) -> tuple[Counter[Hashable], int]:
    if n == 1:
        return Counter(tokens), len(tokens)
    grams: Counter[Hashable] = Counter(zip(*[tokens[i:] for i in range(n)], strict=False))
    return grams, max(len(tokens) - n + 1, 0)


def _compare_ngrams(
    predicted: tuple[Counter[Hashable], int], reference: tuple[Counter[Hashable], int]
) -> RougeScore:
    (pred_counts, pred_total), (ref_counts, ref_total) = predicted, reference
    if len(ref_counts) < len(pred_counts):
        small, large = ref_counts, pred_counts
    else:
        small, large = pred_counts, ref_counts
    overlap = 0
    for gram, count in small.items():
        other = large.get(gram)
        if other:
            overlap += count if count < other else other
    return _from_counts(overlap, pred_total, ref_total)


def _compare_lcs(predicted: list[str], reference: list[str]) -> RougeScore:
    if not predicted or not reference:
        return _ZERO
    return _from_counts(lcs_length(reference, predicted), len(predicted), len(reference))


def _compare_summary_lcs(predicted: list[list[str]], reference: list[list[str]]) -> RougeScore:
    pred_len = sum(map(len, predicted))
    ref_len = sum(map(len, reference))
    if not pred_len or not ref_len:
        return _ZERO
    if len(predicted) == 1 and len(reference) == 1:  # one sentence each: plain LCS
        hits = lcs_length(reference[0], predicted[0])
    else:
        hits = union_lcs_hits(reference, predicted)
    return _from_counts(hits, pred_len, ref_len)


class Rouge(MetricBase):
    """One ROUGE variant as a metric; see the module docstring.

    Parameters (``Params``):
        rouge_type: ``rouge1`` … ``rouge9``, ``rougeL`` or ``rougeLsum``.
        measure: ``f`` (default), ``precision`` or ``recall``.
        use_stemmer: Porter-stem tokens longer than 3 characters (needs nltk).

    ``name`` (keyword): the metric's label (default: ``rouge_type``). The
    registered names are the subclasses :class:`Rouge1`, :class:`Rouge2`,
    :class:`RougeL` and :class:`RougeLsum`, whose ``Params`` fix ``rouge_type``.
    """

    description = "ROUGE (Lin 2004) after rouge-score's tokenisation"

    class Params(StageParams):
        rouge_type: str = "rougeL"
        measure: str = "f"
        use_stemmer: bool = False

    params: Rouge.Params

    def __init__(
        self, params: Rouge.Params | None = None, /, *, name: str | None = None, **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        rouge_type, measure, use_stemmer = p.rouge_type, p.measure, p.use_stemmer
        self.name = name or rouge_type
        if measure not in MEASURES:
            raise ConfigError(
                f"{self.name}: unknown measure {measure!r}; choose one of {', '.join(MEASURES)}"
            )
        self.rouge_type = rouge_type
        self.measure = measure
        self.use_stemmer = use_stemmer
        self._measure_index = RougeScore._fields.index(_MEASURE_FIELDS[measure])
        self._stem: Callable[[str], str] | None = None
        if use_stemmer:
            try:
                self._stem = porter_stem()
            except ImportError as exc:
                raise ConfigError(
                    f"{self.name}: use_stemmer=True needs nltk's Porter stemmer "
                    "(pip install nltk), or set use_stemmer=False"
                ) from exc
        self._prepare: Callable[[str], Any]
        self._compare: Callable[[Any, Any], RougeScore]
        n_match = _ROUGE_N.fullmatch(rouge_type)
        if n_match:
            n = int(n_match.group(1))
            self._prepare = lambda text: _ngrams(self.tokens(text), n)
            self._compare = _compare_ngrams
        elif rouge_type == "rougeL":
            self._prepare = self.tokens
            self._compare = _compare_lcs
        elif rouge_type == "rougeLsum":
            self._prepare = self.sentence_tokens
            self._compare = _compare_summary_lcs
        else:
            raise ConfigError(
                f"{self.name}: unknown rouge_type {rouge_type!r}; "
                "choose rouge1..rouge9, rougeL or rougeLsum"
            )

    def tokens(self, text: str) -> list[str]:
        """``text`` tokenised as rouge-score does (stemmed when ``use_stemmer``)."""
        return rouge_tokens(text, self._stem)

    def sentence_tokens(self, text: str) -> list[list[str]]:
        """The tokens of each non-empty line of ``text`` (ROUGE-Lsum's sentences)."""
        return [self.tokens(line) for line in text.split("\n") if line]

    def scores(self, prediction: str, references: Sequence[str]) -> RougeScore:
        """P, R and F against the reference with the highest F (first on ties)."""
        predicted = self._prepare(prediction)
        best: RougeScore | None = None
        for reference in references or _NO_REFERENCE:
            result = self._compare(predicted, self._prepare(reference))
            if best is None or result.fmeasure > best.fmeasure:
                best = result
        assert best is not None
        return best

    def score(self, sample: Sample) -> Score:
        prediction, references = sample_texts(sample, self.name)
        result = self.scores(prediction, references)
        return Score(
            result[self._measure_index],
            details={
                "precision": result.precision,
                "recall": result.recall,
                "fmeasure": result.fmeasure,
            },
        )


# --- the registered variants: ``rouge_type`` fixed, the default name is the type --------------
class Rouge1(Rouge):
    """ROUGE-1: unigram overlap."""

    class Params(Rouge.Params):
        rouge_type: Literal["rouge1"] = "rouge1"

    params: Rouge1.Params


class Rouge2(Rouge):
    """ROUGE-2: bigram overlap."""

    class Params(Rouge.Params):
        rouge_type: Literal["rouge2"] = "rouge2"

    params: Rouge2.Params


class RougeL(Rouge):
    """ROUGE-L: sentence-level longest common subsequence."""

    class Params(Rouge.Params):
        rouge_type: Literal["rougeL"] = "rougeL"

    params: RougeL.Params


class RougeLsum(Rouge):
    """ROUGE-Lsum: summary-level union LCS over newline-separated sentences."""

    class Params(Rouge.Params):
        rouge_type: Literal["rougeLsum"] = "rougeLsum"

    params: RougeLsum.Params


def rouge1(*, measure: str = "f", use_stemmer: bool = False, name: str = "rouge1") -> Rouge:
    """ROUGE-1 (:class:`Rouge1`)."""
    return Rouge1(measure=measure, use_stemmer=use_stemmer, name=name)


def rouge2(*, measure: str = "f", use_stemmer: bool = False, name: str = "rouge2") -> Rouge:
    """ROUGE-2 (:class:`Rouge2`)."""
    return Rouge2(measure=measure, use_stemmer=use_stemmer, name=name)


def rouge_l(*, measure: str = "f", use_stemmer: bool = False, name: str = "rougeL") -> Rouge:
    """ROUGE-L (:class:`RougeL`)."""
    return RougeL(measure=measure, use_stemmer=use_stemmer, name=name)


def rouge_lsum(*, measure: str = "f", use_stemmer: bool = False, name: str = "rougeLsum") -> Rouge:
    """ROUGE-Lsum (:class:`RougeLsum`)."""
    return RougeLsum(measure=measure, use_stemmer=use_stemmer, name=name)

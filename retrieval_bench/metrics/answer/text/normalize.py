"""Answer normalisation shared by exact match and token F1
(docs/metrics.md#text-metrics).

A :class:`TextNormalizer` applies, in this order (the order of the SQuAD v1.1
evaluation script's ``normalize_answer``, Rajpurkar et al. 2016):

1. ``ignore_case`` — ``str.lower()`` (what SQuAD does;
   not ``casefold``, so "ß" and "ss" stay different);
2. ``ignore_punctuation`` — *delete* punctuation characters: the 32 ASCII
   ``string.punctuation`` characters (SQuAD's set and POSIX ``[[:punct:]]``,
   which include the symbols ``$+<=>^`|~``) plus every Unicode character whose
   category is ``P*`` (so "¿", "«", "—", "。" count). Deleting, not spacing, is
   what SQuAD does: "don't" becomes "dont";
3. ``remove_articles`` — replace the whole words a/an/the (any case) by a space;
4. ``normalize_whitespace`` — collapse every run of whitespace to one space;
5. ``strip`` — drop leading and trailing whitespace.

:meth:`TextNormalizer.squad` is the SQuAD preset (all five on) and
:func:`normalize_answer` applies it. The punctuation table is filled lazily,
one code point at a time, so importing this module costs nothing and each
character's category is looked up once per process.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_bench.contracts.answer_metric import MetricBase, Sample
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError

_ARTICLES = re.compile(r"\b(?:a|an|the)\b", re.IGNORECASE)
_WHITESPACE_RUN = re.compile(r"\s+")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def is_punctuation(char: str) -> bool:
    """ASCII ``string.punctuation`` or any Unicode punctuation category (``P*``)."""
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


class _PunctuationTable(dict[int, int | None]):
    """A ``str.translate`` table deleting punctuation, filled on first sight of a code point."""

    def __missing__(self, code_point: int) -> int | None:
        value = None if is_punctuation(chr(code_point)) else code_point
        self[code_point] = value
        return value


_DELETE_PUNCTUATION = _PunctuationTable()


def remove_punctuation(text: str) -> str:
    """``text`` without its punctuation characters (see :func:`is_punctuation`)."""
    return text.translate(_DELETE_PUNCTUATION)


@dataclass(frozen=True)
class TextNormalizer:
    """The answer normalisation options of exact match and token F1 (module docstring)."""

    ignore_case: bool = False
    ignore_punctuation: bool = False
    remove_articles: bool = False
    normalize_whitespace: bool = True
    strip: bool = True

    @classmethod
    def squad(cls) -> TextNormalizer:
        """SQuAD v1.1 ``normalize_answer``: lowercase, no punctuation, no articles, one space."""
        return cls(True, True, True, True, True)

    def __call__(self, text: str) -> str:
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = text.translate(_DELETE_PUNCTUATION)
        if self.remove_articles:
            text = _ARTICLES.sub(" ", text)
        if self.normalize_whitespace and self.strip:
            return " ".join(text.split())
        if self.normalize_whitespace:
            text = _WHITESPACE_RUN.sub(" ", text)
        if self.strip:
            text = text.strip()
        return text

    def tokens(self, text: str) -> list[str]:
        """The normalised text split on whitespace."""
        return self(text).split()


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 answer normalisation (with Unicode punctuation, see the module docstring)."""
    return _SQUAD(text)


_SQUAD = TextNormalizer.squad()


def normalizer_from_options(
    metric: str,
    *,
    ignore_case: bool,
    ignore_punctuation: bool,
    normalize_whitespace: bool,
    strip: bool,
    remove_articles: bool,
    squad: bool,
) -> TextNormalizer:
    """The normaliser for a metric's keyword options (see :class:`NormalisedTextMetric`)."""
    if not squad:
        return TextNormalizer(
            ignore_case, ignore_punctuation, remove_articles, normalize_whitespace, strip
        )
    if not (normalize_whitespace and strip):
        raise ConfigError(
            f"{metric}: squad=True always collapses and strips whitespace; "
            "drop normalize_whitespace=False / strip=False or set squad=False"
        )
    return TextNormalizer.squad()


class NormalisedTextMetric(MetricBase):
    """Base of the metrics that compare normalised text (exact match, token F1).

    The normalisation options are declared once, here, as the fields of
    :class:`NormalisedTextMetric.Params` (what a config entry may set), and a
    subclass's ``Params`` only re-declares the defaults it changes (token F1
    ignores case). Options:

    * ``ignore_case``: compare lowercased text;
    * ``ignore_punctuation``: delete punctuation (ASCII and Unicode ``P*``) first;
    * ``normalize_whitespace``: collapse whitespace runs to one space;
    * ``strip``: ignore leading/trailing whitespace;
    * ``remove_articles``: drop the words a/an/the;
    * ``squad``: the SQuAD v1.1 preset; turns on case, punctuation and article
      removal (cannot be combined with ``normalize_whitespace=False`` or
      ``strip=False``).

    ``name`` (keyword, default: the class's ``name``) is the metric's label in results.
    """

    class Params(StageParams):
        ignore_case: bool = False
        ignore_punctuation: bool = False
        normalize_whitespace: bool = True
        strip: bool = True
        remove_articles: bool = False
        squad: bool = False

    params: NormalisedTextMetric.Params
    normalizer: TextNormalizer
    """The normaliser the options make (set on construction)."""

    def __init__(
        self,
        params: NormalisedTextMetric.Params | None = None,
        /,
        *,
        name: str | None = None,
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = type(self).name if name is None else name
        self.ignore_case = p.ignore_case
        self.ignore_punctuation = p.ignore_punctuation
        self.normalize_whitespace = p.normalize_whitespace
        self.strip = p.strip
        self.remove_articles = p.remove_articles
        self.squad = p.squad
        self.normalizer = normalizer_from_options(
            self.name,
            ignore_case=p.ignore_case,
            ignore_punctuation=p.ignore_punctuation,
            normalize_whitespace=p.normalize_whitespace,
            strip=p.strip,
            remove_articles=p.remove_articles,
            squad=p.squad,
        )


def sample_texts(sample: Sample, metric: str) -> tuple[str, Sequence[str]]:
    """The prediction and references of ``sample``, checked to be strings.

    Raises TypeError naming ``metric`` otherwise (a batch records it as a missing value).
    """
    prediction, references = sample.prediction, sample.references
    if not isinstance(prediction, str):
        raise TypeError(
            f"{metric}: prediction must be a string, got {type(prediction).__name__}; "
            "convert the answer to text first"
        )
    if isinstance(references, str):
        raise TypeError(f"{metric}: references must be a tuple of strings, not one string")
    for reference in references:
        if not isinstance(reference, str):
            raise TypeError(f"{metric}: references must be strings, got {type(reference).__name__}")
    return prediction, references

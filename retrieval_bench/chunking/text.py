"""Line and token bookkeeping shared by the chunkers (docs/stages.md#chunkers).

A :class:`LineText` tokenizes a file once and keeps per-line token counts, so
"does lines a..b fit the budget?" is a prefix-sum lookup rather than a new
tokenizer call. This is exact because neither built-in tokenizer emits a token
across a newline (see :mod:`retrieval_bench.chunking.tokenizer`).

Lines are split on ``\\n`` only — the same rows tree-sitter, ripgrep and
editors number — and are 0-based here; :func:`make_chunk` converts to the
1-based inclusive spans of :class:`~retrieval_bench.types.Chunk`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, repeat
from typing import NamedTuple

import numpy as np

from retrieval_bench.chunking.tokenizer import Tokenizer, is_safe_cut, token_windows
from retrieval_bench.contracts.chunker import chunk_id
from retrieval_bench.types import Chunk


def split_lines(text: str) -> list[str]:
    """Lines without their ``\\n``; a final newline does not open a new line."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


_LINE_MEMO_LIMIT = 2_000_000
"""Distinct lines whose token count the process keeps, per tokenizer, before it
starts afresh (about 200 MB at the most)."""
_LINE_COUNTS: dict[str, dict[str, int]] = {}


def line_token_counts(lines: Sequence[str], tokenizer: Tokenizer) -> list[int]:
    """The token count of every line, each distinct line tokenised once per process.

    Exact because no token crosses a newline (module doc): a file's count is the sum
    of its lines' counts however the file changed. Snapshots of one repository's
    history mostly repeat lines, so a changed file costs the tokenizer only its new
    lines; the new lines of one call are counted together
    (:meth:`~retrieval_bench.chunking.tokenizer.Tokenizer.count_lines`).
    """
    memo = _LINE_COUNTS.setdefault(tokenizer.name, {})
    counts = list(map(memo.get, lines, repeat(-1)))
    if -1 not in counts:
        return counts
    new = list(dict.fromkeys([line for line, n in zip(lines, counts, strict=True) if n < 0]))
    fresh = dict(zip(new, tokenizer.count_lines(new), strict=True))
    if len(memo) + len(fresh) > _LINE_MEMO_LIMIT:
        memo = _LINE_COUNTS[tokenizer.name] = {}  # a new dict: a concurrent call keeps its own
    memo.update(fresh)
    return [fresh[line] if n < 0 else n for line, n in zip(lines, counts, strict=True)]


class LineText:
    """A file's text with line offsets and per-line token counts (the counts from
    :func:`line_token_counts`; the token offsets, which only the window chunkers
    need, are computed on first use)."""

    def __init__(self, text: str, tokenizer: Tokenizer):
        self.text = text
        self.tokenizer = tokenizer
        self.lines = split_lines(text)
        self.line_tokens: list[int] = line_token_counts(self.lines, tokenizer)
        self._cum = list(accumulate(self.line_tokens, initial=0))
        self._offsets: list[tuple[int, int]] | None = None

    @cached_property
    def line_starts(self) -> np.ndarray:
        """Character offset of every line's start (only the window chunkers ask)."""
        starts = np.zeros(len(self.lines), dtype=np.int64)
        if len(self.lines) > 1:
            starts[1:] = np.cumsum([len(line) + 1 for line in self.lines[:-1]])
        return starts

    @property
    def offsets(self) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets of every token of the text."""
        if self._offsets is None:
            self._offsets = self.tokenizer.offsets(self.text)
        return self._offsets

    @property
    def n_lines(self) -> int:
        return len(self.lines)

    @property
    def total_tokens(self) -> int:
        return int(self._cum[-1])

    def tokens(self, first: int, last: int) -> int:
        """Tokens in rows ``first..last`` (0-based, inclusive)."""
        return int(self._cum[last + 1] - self._cum[first])

    def join(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first : last + 1])

    def row_of(self, char: int) -> int:
        """0-based row of a character offset."""
        return int(np.searchsorted(self.line_starts, char, side="right") - 1)

    def is_blank(self, row: int) -> bool:
        return not self.lines[row].strip()


class Piece(NamedTuple):
    """One output line of a chunk and the original rows it stands for.

    A collapsed line (``def f(self): ...``) stands for every row it hides, so
    the chunk built from it still spans them. ``solo`` marks a fragment of an
    over-long line: it is never joined with neighbours. (A named tuple: the
    chunkers make one per line, and a tuple is made several times faster than a
    frozen dataclass.)
    """

    first: int
    last: int
    text: str
    n_tokens: int
    solo: bool = False


def line_pieces(doc: LineText, first: int, last: int) -> list[Piece]:
    rows, end = range(first, last + 1), last + 1
    return list(map(Piece, rows, rows, doc.lines[first:end], doc.line_tokens[first:end]))


def split_long_piece(piece: Piece, budget: int, tokenizer: Tokenizer) -> list[Piece]:
    """Cut one line longer than ``budget`` tokens into token windows."""
    text = piece.text
    offsets = tokenizer.offsets(text)
    spans = token_windows(text, offsets, budget)
    out = []
    for k, (i, j) in enumerate(spans):
        start = 0 if k == 0 else offsets[i][0]
        end = len(text) if k == len(spans) - 1 else offsets[j - 1][1]
        part = text[start:end]
        n = j - i if _clean_cut(text, offsets, i, j) else tokenizer.count(part)
        out.append(Piece(piece.first, piece.last, part, n, solo=True))
    return out


def _clean_cut(text: str, offsets: Sequence[tuple[int, int]], i: int, j: int) -> bool:
    """Whether tokens ``i..j-1`` re-tokenize alone exactly as within ``text``."""
    return is_safe_cut(text, offsets, i) and is_safe_cut(text, offsets, j)


def pack(pieces: Sequence[Piece], budget: int, tokenizer: Tokenizer) -> list[list[Piece]]:
    """Greedily group consecutive pieces into groups of at most ``budget`` tokens."""
    budget = max(1, budget)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    used = 0
    for piece in pieces:
        parts = [piece] if piece.n_tokens <= budget else split_long_piece(piece, budget, tokenizer)
        for part in parts:
            if current and (part.solo or current[-1].solo or used + part.n_tokens > budget):
                # Prefer to break after a blank line (between definitions or
                # paragraphs) in the second half of the group.
                cut = len(current)
                if not part.solo and not current[-1].solo:
                    half = range(len(current) // 2, len(current) - 1)
                    blanks = [k for k in half if not current[k].text.strip()]
                    cut = blanks[-1] + 1 if blanks else cut
                groups.append(current[:cut])
                current = current[cut:]
                used = sum(p.n_tokens for p in current)
                if current and used + part.n_tokens > budget:
                    groups.append(current)
                    current, used = [], 0
            current.append(part)
            used += part.n_tokens
    if current:
        groups.append(current)
    return groups


def collapse(
    doc: LineText,
    src: bytes,
    line_bytes: Sequence[int],
    first: int,
    last: int,
    hidden: Sequence[tuple[int, int, bytes]],
    lossless: bool,
) -> list[Piece]:
    """Rows ``first..last`` of ``doc`` with the ``hidden`` byte ranges of ``src`` (its
    UTF-8 bytes, lines starting at ``line_bytes``) replaced, as pieces; a line that
    hides something stands for all the rows it spans (docs/stages.md#ast). A line
    left whole is ``doc``'s own row (when ``lossless``: the text encoded as is)."""
    pos = line_bytes[first]
    end = line_bytes[last + 1] - 1 if last + 1 < len(line_bytes) else len(src)
    out = [_OutLine(first, first)]

    def feed(data: bytes) -> None:
        parts = data.split(b"\n")
        out[-1].data += parts[0]
        row = out[-1].last
        for part in parts[1:]:
            row += 1
            out.append(_OutLine(row, row, part))

    for start, stop, replacement in sorted(hidden):
        feed(src[pos:start])
        line = out[-1]
        line.data += replacement
        line.changed = True
        line.last += src.count(b"\n", start, stop)
        pos = stop
    feed(src[pos:end])

    lines = doc.lines if lossless else None
    texts = [
        lines[o.first] if lines and not o.changed else o.data.decode(errors="replace") for o in out
    ]
    changed = [i for i, o in enumerate(out) if o.changed]
    counts = doc.tokenizer.count_lines([texts[i] for i in changed])
    recount = dict(zip(changed, counts, strict=True))
    return [
        Piece(o.first, o.last, texts[i], recount.get(i, doc.line_tokens[o.first]))
        for i, o in enumerate(out)
    ]


@dataclass(slots=True)
class _OutLine:
    """One line of a collapsed text being built (see :func:`collapse`)."""

    first: int
    last: int
    data: bytes = b""
    changed: bool = False


@dataclass(frozen=True)
class Prefix:
    """Context lines put before a chunk's own text (e.g. its class header)."""

    text: str = ""
    n_tokens: int = 0

    def apply(self, body: str) -> str:
        return f"{self.text}\n{body}" if self.text else body


def make_chunk(
    path: str,
    language: str,
    kind: str,
    symbol: str | None,
    first: int,
    last: int,
    text: str,
    n_tokens: int,
) -> Chunk:
    """A :class:`Chunk` for 0-based rows ``first..last`` (stored 1-based)."""
    start, end = first + 1, last + 1
    return Chunk(
        id=chunk_id(path, start, end, text),
        path=path,
        start_line=start,
        end_line=end,
        language=language,
        kind=kind,
        symbol=symbol,
        text=text,
        n_tokens=n_tokens,
    )


def group_chunks(
    groups: Sequence[Sequence[Piece]],
    *,
    path: str,
    language: str,
    kind: str,
    symbol: str | None,
    prefix: Prefix = Prefix(),
) -> list[Chunk]:
    """One chunk per group of pieces, spanning the rows the pieces stand for."""
    chunks = []
    for group in groups:
        body = "\n".join([p.text for p in group])
        if not body or body.isspace():  # every piece blank
            continue
        n = prefix.n_tokens + sum([p.n_tokens for p in group])
        first = min([p.first for p in group])
        last = max([p.last for p in group])
        chunks.append(make_chunk(path, language, kind, symbol, first, last, prefix.apply(body), n))
    return chunks

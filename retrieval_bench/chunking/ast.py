"""The ``ast`` chunker: tree-sitter structure, token budget, collapsed classes
(docs/stages.md#ast; the "better" chunking rung).

For each file:

1. If the whole file fits the budget (default 512 tokens) it is one chunk,
   kind ``file``.
2. Otherwise take each top-level definition (function, class, impl, struct,
   interface …, with its leading comments, decorators and attributes). Code
   between definitions (imports, constants, ``main`` blocks) is grouped into
   line-aligned chunks that fit the budget, kind ``window`` — no code is lost.
3. A definition that fits becomes a chunk (kind ``function``/``class``/
   ``method``). One that does not becomes a *collapsed* chunk: its own lines
   with the bodies of its nested definitions replaced by ``...`` (Python, the
   docstring kept) or ``{ ... }`` (brace languages), indentation preserved; kind ``collapsed``.
4. Each hidden definition is then chunked the same way, recursively, with the
   header line(s) of its parent (``class Foo(Base):``) put before its text. The
   prefix is part of the chunk text and token count; the chunk's start/end
   lines are the definition's own. Symbols are dotted: ``Foo.method``.
5. A definition too big to fit and with nothing nested to hide falls back to
   line-aligned windows (kind ``window``, symbol kept); a single line longer
   than the budget is cut into token windows.

Files in other languages get line-aligned windows of the same budget. Syntax errors
never raise: tree-sitter parses around them (ERROR nodes), any unexpected failure
falls back to windows. Every non-blank line of a file is in at least one chunk.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from tree_sitter import Node, Parser

from retrieval_bench.chunking.definition_memo import definition_memo
from retrieval_bench.chunking.facts_handover import hand_over
from retrieval_bench.chunking.languages import (
    Definition,
    LanguageSpec,
    language_for_path,
    last_row,
    resolve,
    spec_for_path,
)
from retrieval_bench.chunking.text import (
    LineText,
    Piece,
    Prefix,
    collapse,
    group_chunks,
    line_pieces,
    make_chunk,
    pack,
)
from retrieval_bench.chunking.tokenizer import DEFAULT_TOKENIZER, get_tokenizer
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.files import SourceFile
from retrieval_bench.types import Chunk

log = logging.getLogger(__name__)

MAX_DEPTH = 12
"""Nesting levels collapsed before falling back to windows (pathological inputs)."""

_TRIVIAL_BODY = re.compile(rb"^[\s{};]*(\.\.\.|pass)?[\s{};]*$")

# (first row, last row, definition) — rows 0-based inclusive, leading comments included.
Found = tuple[int, int, Definition]


class AstChunker(Chunker):
    """Structure-aware chunking with a token budget (see module docstring).

    Construct with ``CHUNKERS.create("ast", budget=512)``. A chunker
    keeps one tree-sitter parser per language, so use one instance per thread.
    """

    class Params(StageParams):
        budget: int = 512
        tokenizer: str = DEFAULT_TOKENIZER

    name = "ast"
    params: AstChunker.Params

    def __init__(self, params: AstChunker.Params | None = None, /, **values: Any) -> None:
        p = self.params = self.Params.of(params, **values)
        if p.budget < 16:
            raise ValueError("budget must be at least 16 tokens")
        self.budget = int(p.budget)
        self.tokenizer_name = p.tokenizer
        self.tokenizer = get_tokenizer(p.tokenizer)
        self._parsers: dict[str, Parser] = {}

    def config(self) -> dict[str, object]:
        return {"budget": self.budget, "tokenizer": self.tokenizer_name}

    def chunk_file(self, source: SourceFile) -> list[Chunk]:
        if not source.text.strip():
            return []
        doc = LineText(source.text, self.tokenizer)
        language = language_for_path(source.path)
        if doc.total_tokens <= self.budget:
            last, n = doc.n_lines - 1, doc.total_tokens
            return [make_chunk(source.path, language, "file", None, 0, last, source.text, n)]
        spec = spec_for_path(source.path)
        run = _FileRun(self, source, doc, language, spec)
        if spec is not None:
            try:
                return run.structured()
            except Exception:  # never let one odd file stop a build
                log.warning("ast chunking failed for %s; using windows", source.path, exc_info=True)
        return run.region(0, doc.n_lines - 1)

    def parser_for(self, spec: LanguageSpec) -> Parser:
        parser = self._parsers.get(spec.name)
        if parser is None:
            parser = self._parsers[spec.name] = spec.parser()
        return parser


class _FileRun:
    """The chunking of one file (state shared by the recursive steps)."""

    def __init__(
        self,
        chunker: AstChunker,
        source: SourceFile,
        doc: LineText,
        language: str,
        spec: LanguageSpec | None,
    ):
        self.chunker = chunker
        self.budget = chunker.budget
        self.tokenizer = chunker.tokenizer
        self.path = source.path
        self.doc = doc
        self.language = language
        self.spec = spec
        try:
            self.src, self._lossless = source.text.encode("utf-8"), True
        except UnicodeEncodeError:  # lone surrogates, replaced
            self.src, self._lossless = source.text.encode("utf-8", errors="replace"), False
        self._line_bytes: list[int] | None = None
        self._keywords: re.Pattern[bytes] | None = None

    # -- top level ---------------------------------------------------------

    def structured(self) -> list[Chunk]:
        assert self.spec is not None
        tree = self.chunker.parser_for(self.spec).parse(self.src)
        if self.path.endswith(".py"):  # the code graph's facts from this same parse
            hand_over(tree, self.src)
        root = tree.root_node
        if not root.has_error:  # then every definition holds its keyword
            self._keywords = _DEFINITION_KEYWORDS.get(self.spec.name)
        last_line = self.doc.n_lines - 1
        found = _disjoint(self._scan(root.named_children, descend=False))
        # top-level definitions of an error-free Python file: from the memo when seen
        ok = self.spec.indent_blocks and not root.has_error
        memo = definition_memo(self.chunker, self.path, self.language, self.doc) if ok else None
        chunks: list[Chunk] = []
        row = 0
        for first, last, d in found:
            last = min(last, last_line)
            if first > row:
                chunks += self.region(row, first - 1)
            make = partial(self._definition, d, first, last, Prefix(), None, False, 0)
            chunks += make() if memo is None else memo.chunks(first, last, make)
            row = last + 1
        if row <= last_line:
            chunks += self.region(row, last_line)
        return chunks

    def region(self, first: int, last: int) -> list[Chunk]:
        """Line-aligned windows over rows ``first..last`` (blank edges dropped)."""
        doc = self.doc
        while first <= last and doc.is_blank(first):
            first += 1
        while last >= first and doc.is_blank(last):
            last -= 1
        if first > last:
            return []
        groups = pack(line_pieces(doc, first, last), self.budget, self.tokenizer)
        return group_chunks(
            groups, path=self.path, language=self.language, kind="window", symbol=None
        )

    def _scan(self, nodes: Sequence[Node], *, descend: bool) -> list[Found]:
        """Definitions among ``nodes`` in document order, leading comments attached.

        With ``descend`` the search goes into non-definition statements (``if``
        blocks, callbacks) but never inside a definition found. ERROR nodes are
        always searched, so definitions after a syntax error are still found. A node
        is searched only when it may hold one (:meth:`_may_define`).
        """
        assert self.spec is not None
        spec, attachable = self.spec, self.spec.attachable
        found: list[Found] = []
        stack: list[Sequence[Node]] = [nodes]
        while stack:
            pending: list[Node] = []
            prev_end = -1
            for child in stack.pop():
                kind = child.type
                if kind in attachable:
                    pending.append(child)
                    continue
                d = resolve(child, spec)
                if d is not None:
                    first = child.start_point.row
                    for p in reversed(pending):
                        if p.start_point.row > prev_end and last_row(p) >= first - 1:
                            first = p.start_point.row
                        else:
                            break
                    found.append((first, last_row(child), d))
                elif (descend or kind == "ERROR") and self._may_define(child):
                    stack.append(child.named_children)
                prev_end = last_row(child)
                pending = []
        found.sort(key=lambda f: (f[0], f[2].node.start_byte))
        return found

    def _may_define(self, node: Node) -> bool:
        """Whether the search must go into ``node``: it has children and, in an
        error-free tree of a language with ``_DEFINITION_KEYWORDS``, its text holds one
        of them (every definition does). Exact, and skips most statements of a body."""
        if self._keywords is None:
            return node.named_child_count > 0
        return self._keywords.search(self.src, node.start_byte, node.end_byte) is not None

    # -- definitions -------------------------------------------------------

    def _definition(
        self,
        d: Definition,
        first: int,
        last: int,
        prefix: Prefix,
        parent: str | None,
        in_class: bool,
        depth: int,
    ) -> list[Chunk]:
        symbol = f"{parent}.{d.name}" if parent and d.name else (d.name or parent)
        n = prefix.n_tokens + self.doc.tokens(first, last)
        if n <= self.budget:
            text = prefix.apply(self.doc.join(first, last))
            kind = d.kind(in_class)
            return [make_chunk(self.path, self.language, kind, symbol, first, last, text, n)]
        members = self._members(d, last) if depth < MAX_DEPTH else []
        if not members:
            return self._windows(first, last, prefix, symbol)
        hidden = [r for *_, r in members]
        pieces = collapse(
            self.doc, self.src, self._line_starts(), first, last, hidden, self._lossless
        )
        if d.role in ("function", "method") and not self._worth_collapsing(pieces, n, prefix):
            return self._windows(first, last, prefix, symbol)
        groups = pack(pieces, self.budget - prefix.n_tokens, self.tokenizer)
        chunks = group_chunks(
            groups,
            path=self.path,
            language=self.language,
            kind="collapsed",
            symbol=symbol,
            prefix=prefix,
        )
        child_prefix = self._child_prefix(prefix, d)
        nested_in_class = d.role == "class"
        for m_first, m_last, m, _ in members:
            chunks += self._definition(
                m, m_first, m_last, child_prefix, symbol, nested_in_class, depth + 1
            )
        return chunks

    def _worth_collapsing(self, pieces: list[Piece], n_full: int, prefix: Prefix) -> bool:
        """Whether hiding a function's nested definitions helps enough to do it.

        A class outline is always useful; a function whose nested helpers are
        small (a 3-line callback in a 60-line function) would give an "outline"
        that is nearly the whole function, so it is windowed instead — unless
        the outline fits the budget or is at most half the original.
        """
        n_collapsed = prefix.n_tokens + sum(p.n_tokens for p in pieces)
        return n_collapsed <= self.budget or 2 * n_collapsed <= n_full

    def _windows(self, first: int, last: int, prefix: Prefix, symbol: str | None) -> list[Chunk]:
        pieces = line_pieces(self.doc, first, last)
        groups = pack(pieces, self.budget - prefix.n_tokens, self.tokenizer)
        return group_chunks(
            groups,
            path=self.path,
            language=self.language,
            kind="window",
            symbol=symbol,
            prefix=prefix,
        )

    def _members(
        self, d: Definition, last: int
    ) -> list[tuple[int, int, Definition, tuple[int, int, bytes]]]:
        """Nested definitions of ``d`` that can be hidden, with their hidden byte range.

        A member must start below ``d``'s header and not share rows with a
        sibling; otherwise it stays visible in the collapsed chunk.
        """
        if d.body is None:
            return []
        members = []
        for m_first, m_last, m in _disjoint(self._scan(d.body.named_children, descend=True)):
            if m_first <= d.header_end_row or m_last > last:
                continue
            hidden = self._hidden_range(m)
            if hidden is not None:
                members.append((m_first, m_last, m, hidden))
        return members

    def _hidden_range(self, m: Definition) -> tuple[int, int, bytes] | None:
        """Byte range of ``m``'s body to hide and its replacement, or None if trivial."""
        body = m.body
        if body is None:
            return None
        assert self.spec is not None
        if self.spec.indent_blocks:
            stmts = [c for c in body.named_children if c.type != "comment"]
            if stmts and _is_docstring(stmts[0]):
                stmts = stmts[1:]
            if not stmts:
                return None
            start, replacement = stmts[0].start_byte, b"..."
        else:
            start, replacement = body.start_byte, b"{ ... }"
        end = body.end_byte
        while end > start and self.src[end - 1 : end] in (b" ", b"\t", b"\r", b"\n"):
            end -= 1
        if _TRIVIAL_BODY.match(self.src[start:end]):
            return None
        return start, end, replacement

    def _child_prefix(self, prefix: Prefix, d: Definition) -> Prefix:
        """Context for nested chunks: the parent's header, within half the budget."""
        start = d.core.start_point.row
        end = max(start, d.header_end_row)
        header = Prefix(self.doc.join(start, end), self.doc.tokens(start, end))
        candidates = [
            Prefix(prefix.apply(header.text), prefix.n_tokens + header.n_tokens),
            header,
            Prefix(self.doc.lines[start], self.doc.line_tokens[start]),
        ]
        for candidate in candidates:
            if candidate.n_tokens <= self.budget // 2:
                return candidate
        return Prefix()

    def _line_starts(self) -> list[int]:
        if self._line_bytes is None:
            newlines = np.flatnonzero(np.frombuffer(self.src, dtype=np.uint8) == ord("\n"))
            self._line_bytes = [0, *(newlines + 1).tolist()]
        return self._line_bytes


_DEFINITION_KEYWORDS = {"python": re.compile(rb"def|class")}
"""Per language, text that every definition (a node ``languages.resolve`` answers
for) holds when the tree has no error: a node without it holds no definition."""


def _is_docstring(node: Node) -> bool:
    only = node.named_children[0].type if node.named_child_count == 1 else None
    return node.type == "expression_statement" and only == "string"


def _disjoint(found: list[Found]) -> list[Found]:
    """Drop definitions that share rows with another (e.g. minified one-liners)."""
    bad: set[int] = set()
    reach, owner = -1, -1
    for i, (first, last, _) in enumerate(found):
        if first <= reach:
            bad.update((owner, i))
        if last > reach:
            reach, owner = last, i
    return [f for i, f in enumerate(found) if i not in bad]

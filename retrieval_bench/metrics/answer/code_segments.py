"""Split a block of code into the segments that cross-similarity compares
(docs/metrics.md#code-suggestion-similarity).

Two ways, chosen with ``by``:

``"lines"``
    Every non-blank line, stripped of leading/trailing whitespace. Works for
    any language; a comment line is a segment like any other.

``"statements"``
    Statements as the language's tree-sitter grammar sees them (the grammars
    of :mod:`retrieval_bench.chunking.languages`: Python, JavaScript,
    TypeScript/TSX, Go, Rust, Java). The rule:

    * a *simple statement* (``x = f(a, b)``, ``return y``, ``log.info(...)``)
      is one segment, however many lines it spans — a call wrapped over four
      lines is one thing the suggestion got right or wrong, not four;
    * a *compound statement* (``def``/``class``, ``if``/``elif``/``else``,
      ``for``, ``while``, ``try``/``except``/``finally``, ``with``, functions and
      classes in brace languages, ``switch`` cases) contributes its *header*
      — the text before its block, e.g. ``def total(items):`` or
      ``else if (x)`` without the braces; decorators join it — as one segment, and each
      statement of its block is segmented by the same rule, recursively. Text
      after a block (``while (x);`` of a ``do`` loop) is one more segment;
    * comments are not statements: they are dropped, also from inside a
      statement. (Python docstrings are expression statements in the grammar
      and stay.) This is what makes a reference padded with comments look like
      the suggestion it pads;
    * whitespace inside a segment is collapsed to single spaces; a segment
      with no letter or digit (a lone ``}`` or ``);``) is dropped;
    * a syntax error never raises: tree-sitter parses around it, and the text
      of each ERROR node becomes line segments.

    For a language with no grammar here, or no language given, ``statements``
    falls back to ``lines`` (:func:`statement_language` says which applies).

Blocks that are compared must be split the same way: a suggestion cut in the
middle of ``return User(id=..., email=...,`` has line segments where the
reference has one statement, and the two no longer line up.
:func:`segment_blocks` therefore splits a prediction and its references
together, and uses ``lines`` for all of them when any one has a syntax error.

Languages are named as in :data:`~retrieval_bench.chunking.languages.SPECS`
(``"python"``, ``"go"`` …) or by a file extension or path (``"py"``,
``".ts"``, ``"src/app.rs"``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Literal

from tree_sitter import Node, Parser

from retrieval_bench.chunking.languages import SPECS, LanguageSpec, spec_for_path

SegmentBy = Literal["lines", "statements"]
SEGMENT_MODES: tuple[SegmentBy, ...] = ("lines", "statements")

COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
BLOCK_TYPES = frozenset(
    {
        "block",  # python, go, rust, java
        "statement_list",  # go (inside a block)
        "statement_block",  # js/ts
        "class_body",  # js/ts/java
        "interface_body",
        "enum_body",
        "constructor_body",
        "annotation_type_body",
        "object_type",
        "declaration_list",  # rust impl/trait/mod
        "field_declaration_list",
        "enum_variant_list",
        "switch_body",  # js/ts
        "switch_block",  # java
        "match_block",  # rust
    }
)
"""Nodes whose named children are statements (the body of a compound statement)."""
CASE_TYPES = frozenset(
    {
        "switch_case",  # js/ts: case x: stmt; stmt;
        "switch_default",
        "expression_case",  # go
        "default_case",
        "type_case",
        "communication_case",
        "switch_block_statement_group",  # java
    }
)
"""Clauses whose statements follow a ``:`` directly, with no block node around them."""

_WORD = re.compile(r"\w")
_local = threading.local()  # one parser per language per thread (parsers are not thread-safe)


def line_segments(code: str) -> list[str]:
    """The non-blank lines of ``code``, stripped."""
    return [s for line in code.splitlines() if (s := line.strip())]


def language_spec(language: str | None) -> LanguageSpec | None:
    """The grammar for a language name, extension or path; None when there is none."""
    if not language:
        return None
    key = language.strip().lower()
    if key in SPECS:
        return SPECS[key]
    if "." not in key:
        key = f"file.{key}"  # a bare extension: "py"
    elif key.startswith("."):
        key = f"file{key}"  # ".py" (a dotfile name has no suffix)
    return spec_for_path(key)


def statement_language(by: SegmentBy, language: str | None) -> str | None:
    """The grammar that ``segments(..., by, language)`` will parse with (None: lines)."""
    spec = language_spec(language) if by == "statements" else None
    return spec.name if spec is not None else None


def segments(code: str, by: SegmentBy = "lines", language: str | None = None) -> list[str]:
    """Split ``code`` into segments (see the module docstring for the rules)."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a string, got {type(code).__name__}")
    if by not in SEGMENT_MODES:
        raise ValueError(f"unknown segmentation {by!r}; choose 'lines' or 'statements'")
    spec = language_spec(language) if by == "statements" else None
    if spec is None or not code.strip():
        return line_segments(code)
    try:
        return statement_segments(code, spec)
    except RecursionError:  # pathologically deep nesting: lines never fail
        return line_segments(code)


def segment_blocks(
    blocks: Sequence[str], by: SegmentBy = "lines", language: str | None = None
) -> tuple[list[list[str]], str]:
    """Segments of each block, all split the same way, and how: ``"lines"``,
    ``"statements (python)"`` or ``"lines (syntax error)"``."""
    for code in blocks:
        if not isinstance(code, str):
            raise TypeError(f"code must be a string, got {type(code).__name__}")
    if by not in SEGMENT_MODES:
        raise ValueError(f"unknown segmentation {by!r}; choose 'lines' or 'statements'")
    spec = language_spec(language) if by == "statements" else None
    if spec is None:
        return [line_segments(code) for code in blocks], "lines"
    out: list[list[str]] = []
    for code in blocks:
        parsed = _statements_if_clean(code, spec)
        if parsed is None:
            return [line_segments(code) for code in blocks], "lines (syntax error)"
        out.append(parsed)
    return out, f"statements ({spec.name})"


def statement_segments(code: str, spec: LanguageSpec) -> list[str]:
    """Statement segments of ``code`` parsed with ``spec``'s grammar."""
    src = code.encode("utf-8", errors="replace")
    root = _parser(spec).parse(src).root_node
    return _StatementSplitter(src).split(root)


def _statements_if_clean(code: str, spec: LanguageSpec) -> list[str] | None:
    """Statement segments, or None when ``code`` has a syntax error (or nests too deep)."""
    if not code.strip():
        return []
    src = code.encode("utf-8", errors="replace")
    root = _parser(spec).parse(src).root_node
    if root.has_error:
        return None
    try:
        return _StatementSplitter(src).split(root)
    except RecursionError:
        return None


def _parser(spec: LanguageSpec) -> Parser:
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(spec.name)
    if parser is None:
        parser = parsers[spec.name] = spec.parser()
    return parser


class _StatementSplitter:
    """Walks a syntax tree, collecting the leaf tokens of each statement (comments left out)
    and starting a new segment at every block, case clause and statement boundary."""

    def __init__(self, src: bytes):
        self.src = src
        self.out: list[str] = []

    def split(self, root: Node) -> list[str]:
        if root.type == "ERROR":  # nothing parsed at all
            self._error_lines(root)
        else:
            self._block(root)
        return self.out

    def _block(self, node: Node) -> None:
        for child in node.named_children:
            if child.type not in COMMENT_TYPES:
                self._statement(child)

    def _statement(self, node: Node) -> None:
        tokens: list[tuple[int, int]] = []
        self._collect(node, tokens)
        self._flush(tokens)

    def _collect(self, node: Node, tokens: list[tuple[int, int]]) -> None:
        """Append ``node``'s tokens; a block or case inside ends the current segment."""
        t = node.type
        if t in COMMENT_TYPES or node.is_missing:
            return
        if t == "ERROR":
            self._flush(tokens)
            self._error_lines(node)
        elif t in BLOCK_TYPES:
            self._flush(tokens)
            self._block(node)
        elif t in CASE_TYPES:
            self._case(node, tokens)
        elif node.child_count == 0:
            tokens.append((node.start_byte, node.end_byte))
        else:
            # Text between children is whitespace, except inside some string
            # literals (content around escape sequences is no node): keep it.
            pos = node.start_byte
            for child in node.children:
                self._gap(pos, child.start_byte, tokens)
                self._collect(child, tokens)
                pos = max(pos, child.end_byte)
            self._gap(pos, node.end_byte, tokens)

    def _gap(self, start: int, end: int, tokens: list[tuple[int, int]]) -> None:
        if end > start and self.src[start:end].strip():
            tokens.append((start, end))

    def _case(self, node: Node, tokens: list[tuple[int, int]]) -> None:
        self._flush(tokens)
        header: list[tuple[int, int]] = []
        children = node.children
        for i, child in enumerate(children):
            self._collect(child, header)
            if child.type == ":":
                self._flush(header)
                for rest in children[i + 1 :]:
                    if rest.is_named and rest.type not in COMMENT_TYPES:
                        self._statement(rest)
                return
        self._flush(header)

    def _flush(self, tokens: list[tuple[int, int]]) -> None:
        """Join the collected tokens (a space where the source had any gap) as one segment."""
        if not tokens:
            return
        parts: list[bytes] = []
        prev_end = tokens[0][0]
        for start, end in tokens:
            if start > prev_end:
                parts.append(b" ")
            parts.append(self.src[start:end])
            prev_end = end
        tokens.clear()
        text = " ".join(b"".join(parts).decode("utf-8", errors="replace").split())
        if _WORD.search(text):
            self.out.append(text)

    def _error_lines(self, node: Node) -> None:
        text = self.src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
        self.out.extend(s for s in line_segments(text) if _WORD.search(s))

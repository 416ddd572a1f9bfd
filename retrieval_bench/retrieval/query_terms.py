"""Terms to search for, taken from a natural-language question (docs/stages.md#exact).

``raw``: the question's words minus stopwords (question words included);
``identifiers``: identifier-like tokens (backticked text, snake_case,
camelCase, dotted names, paths, CONSTANTS, calls), falling back to raw words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from retrieval_bench.retrieval.code_tokens import DEFAULT_STOPWORDS, word_set

QUESTION_WORDS = word_set(
    "what which where when why how who does did should would could can "
    "find show tell please want need used using use"
)
STOPWORDS = DEFAULT_STOPWORDS | QUESTION_WORDS
MIN_TERM_LEN = 3
_FILE_EXTENSIONS = word_set(
    "py pyi js jsx ts tsx mjs cjs go rs java kt c h cc cpp hpp cs rb php swift scala "
    "sh md rst txt json yaml yml toml ini cfg html css sql proto lock"
)

_WORD_RE = re.compile(r"\w+")
_BACKTICK_RE = re.compile(r"`([^`\n]+)`")
_PATH_RE = re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]*\w")
_DOTTED_RE = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CALL_RE = re.compile(r"\b(\w+)\(")
_CAMEL_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")


def _good(term: str) -> bool:
    return len(term) >= MIN_TERM_LEN and term.casefold() not in STOPWORDS


def dedupe(terms: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for t in terms:
        t = t.strip().strip(".,;:!?\"'()[]{}<>")
        if _good(t) and t.casefold() not in seen:
            seen.add(t.casefold())
            out.append(t)
    return out


def raw_terms(question: str) -> list[str]:
    """Words of the question, minus stopwords, 3+ characters, first occurrence kept."""
    return dedupe(_WORD_RE.findall(question))


def _identifier_kind(word: str) -> int:
    """0: a plain word; 1: an acronym (API, CSV: weak evidence); 2: an identifier."""
    core = word.strip("_")
    if not core:
        return 0
    if core != word or "_" in core:  # snake_case, SCREAMING_SNAKE, _private, __dunder__
        return 2
    if _CAMEL_RE.search(core):  # camelCase, PascalCase with 2+ humps, HTTPServer
        return 2
    has_alpha, has_digit = any(c.isalpha() for c in core), any(c.isdigit() for c in core)
    if has_alpha and has_digit:  # md5, utf8, p99
        return 2
    if core.isupper() and has_alpha:  # CONSTANT; short ones are acronyms
        return 2 if len(core) > 4 else 1
    return 0


def identifier_terms(question: str) -> list[str]:
    """Identifier-like strings of the question (see module doc).

    Falls back to :func:`raw_terms` when there are none, or only acronyms of up
    to 4 letters (``API``, ``CSV``: too weak alone; they are raw words too).
    """
    found: list[tuple[int, str]] = []
    for m in _BACKTICK_RE.finditer(question):
        found.append((m.start(), m.group(1).strip().removesuffix("()")))
    for m in _PATH_RE.finditer(question):
        name = m.group(0).rsplit("/", 1)[-1]
        found.append((m.start(), name))
        found.append((m.start(), name.split(".", 1)[0]))
    for m in _DOTTED_RE.finditer(question):
        dotted = m.group(0)
        parts = dotted.split(".")
        if all(len(p) == 1 for p in parts):  # e.g, i.e
            continue
        found.append((m.start(), dotted))
        last = parts[-1]
        found.append((m.start(), parts[0] if last.lower() in _FILE_EXTENSIONS else last))
    for m in _CALL_RE.finditer(question):
        found.append((m.start(), m.group(1)))
    strong = bool(dedupe([t for _, t in found]))
    for m in _WORD_RE.finditer(question):
        kind = _identifier_kind(m.group(0))
        if kind:
            found.append((m.start(), m.group(0)))
            strong = strong or (kind == 2 and _good(m.group(0)))
    if not strong:
        return raw_terms(question)
    found.sort(key=lambda pos_term: pos_term[0])  # stable: keeps per-position order
    return dedupe([t for _, t in found])


TERM_EXTRACTORS: dict[str, Callable[[str], list[str]]] = {
    "raw": raw_terms,
    "identifiers": identifier_terms,
}

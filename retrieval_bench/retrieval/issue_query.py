"""Reading an issue: what a bug report names, for the lexical rungs
(docs/stages.md#reading-an-issue).

A bug report is mostly prose, but its strongest evidence is in the parts that
look like code: traceback frames (``File ".../x.py", line N, in f``), paths,
dotted names (``pkg.mod.Class.method``), identifiers, exception lines
(``TypeError: Could not convert ...``) and quoted messages. Fed whole to BM25,
a 6,000-character issue with a pasted script drowns those few tokens in
hundreds of ordinary ones; this module pulls them out so that ``bm25``
(``query: issue``) and ``exact`` (``terms: issue``) can weigh them.

Two steps:

1. :func:`parse_issue` — corpus-independent extraction into a
   :class:`ParsedIssue`: title (first non-blank line), body (the rest, minus
   traceback frame lines, whose site-packages paths are noise), frames, paths,
   dotted module names (``from a.b import c``, ``a.b.c``), symbols with a
   *source weight* (:data:`SOURCE_WEIGHTS`: prose, traceback frames and
   exception names 1.0; identifiers found only inside fenced code 0.5, since a
   pasted script names the user's own variables as often as the library's),
   and literals (exception messages and double-quoted prose, cut at quotes,
   digits and punctuation into runs of 3+ words, so run-time values drop out).
2. :class:`IssueReader` — maps paths onto the snapshot by the longest common
   suffix of path components (``/usr/lib/python3/dist-packages/pydicom/
   dataset.py`` → ``pydicom/dataset.py``), dotted modules onto ``a/b.py`` or
   ``a/b/__init__.py``, and returns an :class:`IssueQuery` whose ``paths``
   weigh each named snapshot file (1 for a path or an in-snapshot traceback
   frame, :data:`MODULE_WEIGHT` for a dotted module, divided by the number of
   equally good matches). A path of two or more components must match at
   least two of them (or the whole snapshot path), so ``click/core.py`` in
   site-packages never lands on some ``core.py`` of the snapshot.

Rarity is left to the consumers, which know their corpus statistics: ``bm25``
through its own idf, ``exact`` through ripgrep's per-file match counts
(``log(1 + N/df)``). :func:`issue_bag` builds the weighted BM25 query;
:func:`defines` tells a definition line (``def name``, ``class Name``, a
module-level ``name =``) from a mere mention.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from retrieval_bench.retrieval.query_terms import MIN_TERM_LEN, STOPWORDS

if TYPE_CHECKING:
    from retrieval_bench.corpus import Corpus

SOURCE_WEIGHTS = {"prose": 1.0, "frame": 1.0, "exception": 1.0, "code": 0.5}
"""Weight of a symbol by where the issue names it (its largest, over mentions)."""
MODULE_WEIGHT = 0.5
"""Weight of a snapshot file named only as a dotted module (imports of a user script)."""
MAX_AMBIGUOUS = 3
"""A path matching more snapshot files than this equally well names none of them."""

_CODE_EXTS = (
    "py|pyi|pyx|js|jsx|ts|tsx|mjs|cjs|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|"
    "scala|sh|cfg|ini|toml|yaml|yml|json|rst|md|txt"
)
_EXT_SET = frozenset(_CODE_EXTS.split("|"))
_FRAME_RE = re.compile(
    r'^[ \t]*File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[\w<>.]+))?[^\n]*$',
    re.M,
)
_FENCE_RE = re.compile(
    r"^[ \t]*(?P<fence>```|~~~)[^\n]*\n(?P<body>.*?)(?:^[ \t]*(?P=fence)[ \t]*$|\Z)", re.M | re.S
)
_EXC_RE = re.compile(
    r"^[ \t>]*(?:E[ \t]+)?(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure))(?::[ \t]*(?P<msg>[^\n]*))?$",
    re.M,
)
_PATH_RE = re.compile(
    r"(?<![\w.~/\\-])(?:[A-Za-z]:)?[/\\]?(?:[\w.~-]+[/\\])*[\w.-]*\w\.(?:" + _CODE_EXTS + r")(?!\w)"
)
_DOTTED_RE = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IMPORT_RE = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)
_BACKTICK_RE = re.compile(r"`([^`\n]+)`")
_CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\(")
_WORD_RE = re.compile(r"[A-Za-z_]\w*")
_CAMEL_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_QUOTED_RE = re.compile(r"\"([^\"\n]{8,300})\"|\u201c([^\u201d\n]{8,300})\u201d")
_LITERAL_CUT_RE = re.compile(r"[\"'`{}\[\]()<>:=!?;|\\/*#@$%^&~]|\d|\s-\s")
_MIN_LITERAL_WORDS = 3


@dataclass(frozen=True)
class Frame:
    """One traceback frame as written: ``File "path", line N, in function``."""

    path: str
    line: int
    function: str


@dataclass
class ParsedIssue:
    """What :func:`parse_issue` finds in an issue's text (no corpus needed)."""

    title: str
    body: str
    frames: list[Frame] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    symbols: dict[str, float] = field(default_factory=dict)
    """identifier or dotted name → source weight (:data:`SOURCE_WEIGHTS`), in order found."""
    literals: list[str] = field(default_factory=list)


@dataclass
class IssueQuery:
    """A parsed issue resolved against one snapshot."""

    parsed: ParsedIssue
    paths: dict[str, float]
    """snapshot path → weight in (0, 1] (see module doc)."""

    def terms(self) -> dict[str, float]:
        """Symbols, then literals, as ripgrep terms with their source weights: the
        strongest first (ties in the order the issue names them)."""
        found = dict(self.parsed.symbols)
        for lit in self.parsed.literals:
            found.setdefault(lit, 1.0)
        order = {t: i for i, t in enumerate(found)}
        return dict(sorted(found.items(), key=lambda kv: (-kv[1], order[kv[0]])))


def is_identifier(word: str) -> bool:
    """Whether a word is shaped like code, not prose: snake_case or ``_private``,
    camelCase/PascalCase with 2+ humps (``HTTPServer``), letters with digits
    (``utf8``), or a CONSTANT of 5+ letters (shorter ones are acronyms)."""
    core = word.strip("_")
    if not core:
        return False
    if core != word or "_" in core or _CAMEL_RE.search(core):
        return True
    letters, digits = any(c.isalpha() for c in core), any(c.isdigit() for c in core)
    return letters and (digits or (core.isupper() and len(core) > 4))


def _good(term: str) -> bool:
    return len(term) >= MIN_TERM_LEN and term.casefold() not in STOPWORDS


def _add(symbols: dict[str, float], term: str, source: str) -> None:
    term = term.strip().strip(".,;:!?\"'()[]{}<>")
    if not _good(term) or not re.fullmatch(r"[A-Za-z_][\w.]*", term):
        return
    weight = SOURCE_WEIGHTS[source]
    symbols[term] = max(symbols.get(term, 0.0), weight)


def _add_dotted(symbols: dict[str, float], dotted: str, source: str) -> None:
    """``pkg.mod.Class.method``: the parts, each a symbol (the whole rarely occurs)."""
    for part in dotted.split("."):
        _add(symbols, part, source)


def _literals(message: str) -> list[str]:
    """Runs of 3+ words of ``message`` between quotes, digits and punctuation."""
    out = []
    for piece in _LITERAL_CUT_RE.split(message):
        piece = " ".join(piece.split()).strip(" .,-")
        if len(piece.split()) >= _MIN_LITERAL_WORDS and len(piece) >= 12:
            out.append(piece)
    return out


def _scan_text(text: str, symbols: dict[str, float], modules: list[str], source: str) -> None:
    """Identifiers, calls, dotted names and imports of one stretch of text."""
    for m in _IMPORT_RE.finditer(text):
        modules.append(m.group(1) or m.group(2))
    for m in _BACKTICK_RE.finditer(text):
        inner = m.group(1).strip().removesuffix("()")
        if "." in inner and _DOTTED_RE.fullmatch(inner):
            _add_dotted(symbols, inner, source)
            modules.append(inner)
        elif _WORD_RE.fullmatch(inner):  # `name`: an identifier whatever its shape
            _add(symbols, inner, source)
        # a backticked command or sentence is scanned below like any text
    for m in _DOTTED_RE.finditer(text):
        dotted = m.group(0)
        parts = dotted.split(".")
        if all(len(p) <= 2 for p in parts) or parts[-1].lower() in _EXT_SET:
            continue  # e.g., i.e., file names
        modules.append(dotted)
        for part in parts:
            if is_identifier(part) or part[:1].isupper() or part != parts[0]:
                _add(symbols, part, source)
    for m in _CALL_RE.finditer(text):
        _add(symbols, m.group(1), source)
    for m in _WORD_RE.finditer(text):
        if is_identifier(m.group(0)):
            _add(symbols, m.group(0), source)


def parse_issue(text: str) -> ParsedIssue:
    """Extract title, body, frames, paths, modules, symbols and literals (module doc)."""
    lines = text.strip().splitlines()
    title = lines[0].strip() if lines else ""
    rest = "\n".join(lines[1:])
    frames = [
        Frame(m.group("path"), int(m.group("line")), m.group("func") or "")
        for m in _FRAME_RE.finditer(text)
    ]
    symbols: dict[str, float] = {}
    modules: list[str] = []
    literals: list[str] = []
    for m in _EXC_RE.finditer(text):
        _add(symbols, m.group("exc").rsplit(".", 1)[-1], "exception")
        literals.extend(_literals(m.group("msg") or ""))
    no_frames = _FRAME_RE.sub("", text)
    code = [m.group("body") for m in _FENCE_RE.finditer(no_frames)]
    prose = _FENCE_RE.sub("\n", no_frames)
    _scan_text(prose, symbols, modules, "prose")
    for block in code:
        _scan_text(block, symbols, modules, "code")
    for m in _QUOTED_RE.finditer(prose):
        literals.extend(_literals(m.group(1) or m.group(2)))
    paths = [fr.path for fr in frames]
    paths += [m.group(0) for m in _PATH_RE.finditer(no_frames)]
    return ParsedIssue(
        title=title,
        body=_FRAME_RE.sub("", rest),
        frames=frames,
        paths=list(dict.fromkeys(paths)),
        modules=list(dict.fromkeys(modules)),
        symbols=symbols,
        literals=list(dict.fromkeys(literals)),
    )


@lru_cache(maxsize=1 << 17)
def _parts(raw: str) -> tuple[str, ...]:
    """Path components, casefolded: backslashes, drive letters and ``./`` undone.
    Memoised: every stage that reads issues indexes the same snapshot paths, and the
    snapshots of one repository share most of them."""
    path = raw.strip().replace("\\", "/")
    path = re.sub(r"^[A-Za-z]:/", "/", path)
    return tuple(p.casefold() for p in path.split("/") if p not in ("", "."))


class IssueReader:
    """Resolves parsed issues against the files of one snapshot (module doc)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_name: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for path in paths:
            parts = _parts(path)
            if parts:
                self._by_name.setdefault(parts[-1], []).append((path, parts))

    def resolve_path(self, raw: str) -> list[str]:
        """Snapshot files that ``raw`` names, by longest common suffix of components;
        [] when none matches well enough or too many match equally well."""
        parts = _parts(raw)
        if not parts:
            return []
        best, found = 0, []
        for path, own in self._by_name.get(parts[-1], ()):
            n = 0
            while n < min(len(parts), len(own)) and parts[-1 - n] == own[-1 - n]:
                n += 1
            if n < 2 and len(parts) > 1 and n < len(own):
                continue  # a bare file name inside another folder: not this file
            if n > best:
                best, found = n, [path]
            elif n == best:
                found.append(path)
        return sorted(found) if len(found) <= MAX_AMBIGUOUS else []

    def resolve_module(self, dotted: str) -> list[str]:
        """Snapshot files of the longest prefix (2+ parts) of ``dotted`` that is a module."""
        parts = dotted.split(".")
        for n in range(len(parts), 1, -1):
            stem = "/".join(parts[:n])
            for candidate in (stem + ".py", stem + "/__init__.py"):
                found = [
                    p
                    for p in self.resolve_path(candidate)
                    if _parts(p)[-len(_parts(candidate)) :] == _parts(candidate)
                ]
                if found:
                    return found
        return []

    def read(self, text: str) -> IssueQuery:
        """Parse ``text`` and weigh the snapshot files it names."""
        parsed = parse_issue(text)
        weights: dict[str, float] = {}

        def credit(found: list[str], weight: float) -> None:
            for path in found:
                weights[path] = max(weights.get(path, 0.0), weight / len(found))

        for raw in parsed.paths:
            credit(self.resolve_path(raw), 1.0)
        for module in parsed.modules:
            credit(self.resolve_module(module), MODULE_WEIGHT)
        for fr in parsed.frames:  # only frames inside the snapshot name its functions
            if fr.function and not fr.function.startswith("<") and self.resolve_path(fr.path):
                _add(parsed.symbols, fr.function, "frame")
        return IssueQuery(parsed, weights)


_READER_KEY = ("issue-reader",)


def corpus_reader(corpus: Corpus) -> IssueReader:
    """The :class:`IssueReader` of ``corpus``'s files, built once per corpus and shared by
    every stage that resolves what a question names in the snapshot (it is read-only)."""
    return corpus.derived(_READER_KEY, lambda: IssueReader(corpus.paths))


def issue_bag(
    issue: IssueQuery,
    tokenize: Callable[[str], list[str]],
    *,
    title_weight: float = 1.0,
    body_weight: float = 1.0,
    body_tokens: int | None = None,
    symbol_weight: float = 2.0,
    symbol_parts: bool = False,
) -> dict[str, float]:
    """The weighted BM25 query of an issue: token → weight.

    Each title token occurrence adds ``title_weight``; each of the first
    ``body_tokens`` body tokens (all when None) adds ``body_weight``; each
    distinct token of a symbol or literal adds ``symbol_weight`` × its source
    weight (only each identifier's first token — the whole identifier, for the
    code tokenizer — unless ``symbol_parts``), and each token of a named file's
    stem ``symbol_weight`` × the path's weight. BM25 with query-term frequency
    sums its terms linearly (Robertson & Zaragoza 2009, "The Probabilistic
    Relevance Framework: BM25 and Beyond"), so a weight acts as that many repeats
    of the token; ``bm25`` scores real weights the same way.
    """
    bag: dict[str, float] = {}

    def add(tokens: Iterable[str], weight: float) -> None:
        if weight:
            for tok in tokens:
                bag[tok] = bag.get(tok, 0.0) + weight

    parsed = issue.parsed
    add(tokenize(parsed.title), title_weight)
    body = tokenize(parsed.body)
    add(body if body_tokens is None else body[:body_tokens], body_weight)
    for term, weight in issue.terms().items():
        if symbol_parts:
            tokens = set(tokenize(term))
        else:
            tokens = {t for ident in _WORD_RE.findall(term) for t in tokenize(ident)[:1]}
        add(tokens, symbol_weight * weight)
    for path, weight in issue.paths.items():
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
        add(set(tokenize(stem)), symbol_weight * weight)
    return bag


@lru_cache(maxsize=4096)
def _definition_re(term: str, ignore_case: bool) -> re.Pattern[str]:
    name = re.escape(term)
    return re.compile(
        rf"^[ \t]*(?:async[ \t]+)?(?:def|class|function|func|fn|struct|interface|type)"
        rf"[ \t]+{name}\b|^(?:export[ \t]+)?(?:const[ \t]+|let[ \t]+|var[ \t]+)?{name}"
        rf"[ \t]*(?::[^=\n]*)?=(?!=)",
        re.I if ignore_case else 0,
    )


_MAYBE_DEFINES = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class|function|func|fn|struct|interface|type)[ \t]", re.I
)


def may_define(line: str) -> bool:
    """False when ``line`` defines no term that starts with neither a space nor a tab
    (:func:`defines` is then False for each): it does not start with a definition
    keyword, and has no ``=`` or starts with a space or tab (an assignment defines
    only at the start of a line); one test per line instead of one per term."""
    if _MAYBE_DEFINES.match(line) is not None:
        return True
    return line[:1] not in (" ", "\t") and "=" in line


def defines(line: str, term: str, ignore_case: bool = True) -> bool:
    """Whether ``line`` defines ``term``: ``def term``/``class Term`` (any indent; also
    ``function``/``func``/``fn``/``struct``/``interface``/``type``) or an assignment
    ``term =`` / ``term: T =`` at the start of the line (module level)."""
    return bool(_definition_re(term, ignore_case).search(line))

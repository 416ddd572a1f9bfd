"""Code references in an LLM answer: what it cites, and which repository file it means.

File references in the answer are extracted and checked against the
repository (docs/stages.md#answerer, docs/metrics.md#grounded-references).
:func:`extract_references`
finds what answers actually write —

* paths: ``src/shopapi/auth.py``, ``./auth.py``, ``src\\auth.py`` (made posix),
  ``Makefile``; a file name needs an extension the project chunks
  (:func:`retrieval_bench.chunking.languages.language_for_path`) or a common
  text/config one;
* line ranges attached to a path: ``auth.py:42``, ``auth.py:42-57``,
  ``auth.py#L42-L57``, ``auth.py, lines 42–57``, ``lines 10 to 20 of x.py``;
* Markdown links ``[auth](src/auth.py#L3)`` (a code label is the symbol);
* symbols: backticked ``verify_token()``, ``TokenStore.get``, ``class Foo``;
  ``def foo`` / ``class Foo`` / ``function foo_bar`` / ``foo()`` in prose;
  and "verify() in auth.py:42" (symbol backticked) or ``tests/x.py::test_y`` tie a
  symbol to its file.

It is a table of regexes (:data:`_PATTERNS`) run over the text; overlapping
matches keep the leftmost-longest one, duplicates keep the first occurrence.
False positives are avoided by masking URLs and e-mail addresses first, by
requiring a known extension (so ``1.2.3`` and ``e.g.`` are not files) and a
word-boundary start, by skipping home- and environment-relative paths
(``~/.config/x.yaml``, ``$XDG_CONFIG_HOME/x.yaml``: outside the repository), by
a short list of names that are products rather than files (``Node.js``),
and — for symbols — by skipping fenced code blocks (suggested new code is not
a claim about the repository), keywords, builtins, standard-library calls
(``json.loads``) and plain lowercase words in backticks (``admin`` is as likely
a value as a name). A line range with no
path ("see lines 10-20") cannot be checked and is not extracted.

Which repository file a cited path means is :mod:`retrieval_bench.answering.paths`.
"""

from __future__ import annotations

import builtins
import keyword
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from retrieval_bench.answering.paths import normalise_path
from retrieval_bench.chunking.languages import language_for_path


@dataclass(frozen=True)
class CodeReference:
    """One reference found in an answer; any of path, lines and symbol may be absent."""

    path: str | None
    """As written, made posix (``\\`` → ``/``, no ``./``); not yet resolved."""
    start_line: int | None
    end_line: int | None
    """Equal to ``start_line`` for a single line; may be < start if the answer says so."""
    symbol: str | None
    """A name such as ``verify_token`` or ``TokenStore.get`` (no parentheses, no ``self.``)."""
    text: str
    """The matched span of the answer."""
    offset: int
    """Where ``text`` starts in the answer."""

    @property
    def key(self) -> tuple[str | None, int | None, int | None, str | None]:
        return (self.path, self.start_line, self.end_line, self.symbol)

    def describe(self) -> str:
        """Short label for messages: ``auth.py:42-57 verify_token``."""
        label = self.path or ""
        if self.start_line is not None:
            label += f":{self.start_line}"
            if self.end_line is not None and self.end_line != self.start_line:
                label += f"-{self.end_line}"
        if self.symbol:
            label = f"{label} `{self.symbol}`" if label else f"`{self.symbol}`"
        return label


# --------------------------------------------------------------------------- vocabulary
def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_EXTRA_EXTENSIONS = frozenset(
    _words(
        ".txt .cfg .ini .conf .lock .mod .sum .xml .gradle .properties .csv .jsonl .proto "
        ".graphql .vue .svelte .php .cs .scala .lua .dart .cc .cxx .hs .tf .mk .bat .ps1 .zsh "
        ".scss .less .ipynb"
    )
)
"""Text files ``language_for_path`` labels plain "text" that answers still cite."""

_BARE_FILE_NAMES = _words(
    "Makefile GNUmakefile Dockerfile Containerfile Jenkinsfile Procfile Gemfile Rakefile "
    "Vagrantfile Justfile .gitignore .dockerignore .editorconfig .env"
)
_NOT_FILES = frozenset(
    _words(
        "node.js vue.js next.js nuxt.js react.js express.js angular.js ember.js backbone.js "
        "three.js d3.js chart.js p5.js alpine.js docs.rs"
    )
)
"""Product names that look like files; only when written without a folder."""

_JS_GLOBALS = "console Math JSON Object Array Promise Number String Date Symbol Reflect window"
_OTHER_WORDS = (
    "self this cls super null undefined nil true false new var let const func fn impl pub mut "
    "struct enum match use mod crate static void int string bool float double char byte"
)
_NOT_SYMBOLS = frozenset([*keyword.kwlist, *keyword.softkwlist, *dir(builtins)]) | frozenset(
    (_JS_GLOBALS + " " + _OTHER_WORDS).split()
)
"""Single names that are never repository symbols."""
_EXTERNAL_HEADS = _NOT_SYMBOLS | frozenset(sys.stdlib_module_names) | {"document", "process"}
"""First parts of dotted names that point outside the repository (``json.loads``)."""
_RECEIVERS = frozenset({"self", "this", "cls"})
_SYMBOL_SPLIT = re.compile(r"\.|::|#")
_RECEIVER_PREFIX = re.compile(r"^(?:(?:self|this|cls)(?:\.|::|#))+")

# --------------------------------------------------------------------------- regex parts
_SEP = r"[\\/]"
_PREFIX = rf"(?:[A-Za-z]:{_SEP}|\.{{1,2}}{_SEP}|{_SEP})*"
_DIR = r"\.?[\w@+\-][\w.@+\-]*"
_FILE = r"\.?[\w@+\-]+(?:\.[\w@+\-]+)+"
_BARE = "(?:" + "|".join(re.escape(n) for n in _BARE_FILE_NAMES) + r")(?![\w\-]|\.\w)"
_PATH = rf"(?P<path>(?<![\w@.\\/~$%\-]){_PREFIX}(?:{_DIR}{_SEP})*(?:{_BARE}|{_FILE}))"
_TO = r"\s*(?:-|–|—|\.\.|to|through|thru)\s*"


def _loc(tag: str) -> str:
    """Line location after a path: ``:42-57``, ``#L42-L57`` or ``, lines 42–57``."""

    def start(form: str) -> str:
        return rf"(?P<start{tag}{form}>\d{{1,7}})"

    def end(form: str) -> str:
        return rf"(?P<end{tag}{form}>\d{{1,7}})"

    colon = rf":L?{start('c')}(?:(?:-|–|—)L?{end('c')})?(?::\d+)?"
    anchor = rf"#L{start('h')}(?:C\d+)?(?:-L?{end('h')}(?:C\d+)?)?"
    prose = (
        rf"`?\)?\s*[,:]?\s*\(?\s*(?:(?:at|on|in)\s+)?(?:[Ll]ines?|ll?\.|L)\s*{start('p')}"
        rf"(?:{_TO}L?{end('p')})?\)?"
    )
    return rf"(?:{colon}|{anchor}|{prose})?"


_ID = r"[A-Za-z_$]\w*"
_CHAIN = rf"{_ID}(?:(?:\.|::|#){_ID})*"
_KEYWORDS = (
    "def|fn|func|fun|class|struct|interface|enum|trait|type|record|protocol|impl|function|method"
)
_ARGS = r"(?P<args>\([^`()\n]{0,200}\))?"
_SYM_BT = rf"`(?:(?:async\s+)?(?P<kw>{_KEYWORDS})\s+)?(?P<sym>{_CHAIN}){_ARGS}`"
_TIE = (
    r"\s*(?:\(\s*`?|,?\s+(?:(?:is|are)\s+)?(?:(?:defined|declared|implemented|located|found)\s+)?"
    r"(?:in|inside|within|from|at|of)\s+(?:the\s+)?(?:file\s+)?`?)"
)
_LINK_LABEL = re.compile(
    rf"(?P<bt>`)?(?:(?:async\s+)?(?P<kw>{_KEYWORDS})\s+)?(?P<sym>{_CHAIN})(?P<call>\(.*\))?`?"
)

_KEYWORD_STYLE = {kw: "type" for kw in _KEYWORDS.split("|")} | {
    "def": "any",
    "fn": "any",
    "func": "any",
    "fun": "any",
    "function": "code",
    "method": "code",
}
"""How strict a name after a prose keyword must look: any name, a type-like
(Capitalised) name, or a code-like (snake/camel/dotted) name."""


@dataclass(frozen=True)
class _Pattern:
    label: str
    regex: re.Pattern[str]
    symbol_style: str | None = None
    """How the ``sym`` group was written: "backticked", "prose" (keyword decides),
    "called" (``name()``), or None when there is no symbol group."""
    scan_code_blocks: bool = True


_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern("path", re.compile(_PATH + _loc("a"))),
    _Pattern(
        "lines of path",
        re.compile(
            rf"\b(?:[Ll]ines?|L)\s*(?P<startb>\d{{1,7}})(?:{_TO}L?(?P<endb>\d{{1,7}}))?\s+"
            rf"(?:of|in|from)\s+(?:the\s+)?(?:file\s+)?`?{_PATH}"
        ),
    ),
    _Pattern(
        "markdown link",
        re.compile(
            r"\[(?P<label>[^\]\n]{1,200})\]\(\s*<?(?P<lpath>[^\s()<>#]+?)>?"
            r"(?:#L(?P<startl>\d{1,7})(?:-L?(?P<endl>\d{1,7}))?)?(?:\s+\"[^\"]*\")?\s*\)"
        ),
    ),
    _Pattern(
        "symbol in path",
        re.compile(_SYM_BT + _TIE + _PATH + _loc("s") + r"`?\)?"),
        "backticked",
        scan_code_blocks=False,
    ),
    _Pattern("path::symbol", re.compile(rf"{_PATH}::(?P<sym>{_CHAIN})"), "called"),
    _Pattern("symbol", re.compile(_SYM_BT), "backticked", scan_code_blocks=False),
    _Pattern(
        "keyword symbol",
        re.compile(rf"\b(?P<kw>{_KEYWORDS})\s+(?P<sym>{_CHAIN})\b(?!\.\w)"),
        "prose",
        scan_code_blocks=False,
    ),
    _Pattern(
        "call", re.compile(rf"(?<![\w.$`])(?P<sym>{_CHAIN})\(\)"), "called", scan_code_blocks=False
    ),
)

_URL = re.compile(r"(?<![\w+.\-])[A-Za-z][\w+.\-]*://[^\s<>()\[\]`'\"]*|\bwww\.[^\s<>()\[\]`'\"]+")
_EMAIL = re.compile(r"(?<![\w.+\-])[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[^\n]*$|\Z)", re.S | re.M)


# --------------------------------------------------------------------------- small checks
def looks_like_file(path: str) -> bool:
    """Whether the last component is a file name answers cite (known extension or name)."""
    name = PurePosixPath(path).name
    if name in _BARE_FILE_NAMES:
        return True
    stem, dot, _ = name.lstrip(".").partition(".")
    if not dot or not re.search(r"[A-Za-z_]", stem):
        return False  # 1.2.3, 42.0
    if "/" not in path and name.lower() in _NOT_FILES:
        return False
    ext = PurePosixPath(name).suffix.lower()
    return ext in _EXTRA_EXTENSIONS or language_for_path(name) != "text"


def symbol_parts(symbol: str) -> list[str]:
    """``TokenStore.get`` → ``["TokenStore", "get"]`` (also ``::`` and ``#``)."""
    return [p for p in _SYMBOL_SPLIT.split(symbol) if p]


def _code_like(parts: list[str]) -> bool:
    name = parts[-1]
    mixed = any(c.isupper() for c in name[1:]) and any(c.islower() for c in name)
    return len(parts) > 1 or "_" in name.strip("_") or mixed or any(c.isdigit() for c in name)


def _type_like(parts: list[str]) -> bool:
    name = parts[-1]
    return len(name) > 2 and name[0].isupper() and any(c.islower() for c in name)


_STYLE_CHECKS = {
    "any": lambda parts: True,
    "code": _code_like,
    "type": lambda parts: _type_like(parts) or _code_like(parts),
}


def _clean_symbol(raw: str, style: str) -> str | None:
    """The symbol to record (no ``self.``), or None when ``raw`` is not a repository
    name written in ``style``."""
    written = symbol_parts(raw)
    parts = symbol_parts(_RECEIVER_PREFIX.sub("", raw))
    if not parts or not _STYLE_CHECKS[style](written) or looks_like_file(".".join(parts)):
        return None
    if parts[0] in (_NOT_SYMBOLS if len(parts) == 1 else _EXTERNAL_HEADS):
        return None
    return _RECEIVER_PREFIX.sub("", raw)


def _symbol_style(pattern: _Pattern, groups: Mapping[str, str | None]) -> str:
    kw = groups.get("kw")
    if pattern.symbol_style == "prose":
        return _KEYWORD_STYLE[kw or "function"]
    if pattern.symbol_style == "called" or kw or groups.get("args"):
        return "any"
    # A backticked name without a keyword: code-like or a Type; not a plain word.
    return "type"


def _first_int(groups: Mapping[str, str | None], prefix: str) -> int | None:
    for name, value in groups.items():
        if name.startswith(prefix) and value is not None:
            return int(value)
    return None


def _label_symbol(label: str) -> str | None:
    m = _LINK_LABEL.fullmatch(label.strip())
    if m is None:
        return None
    style = "type" if m["bt"] else "code"
    return _clean_symbol(m["sym"], "any" if (m["kw"] or m["call"]) else style)


def _build(pattern: _Pattern, match: re.Match[str], text: str) -> CodeReference | None:
    groups = match.groupdict()
    path: str | None = None
    symbol: str | None = None
    if groups.get("path") is not None:
        path = normalise_path(groups["path"] or "")
        if not looks_like_file(path):
            return None
    if groups.get("lpath") is not None:
        link = groups["lpath"] or ""
        if ":" in link[2:] or link.endswith(("/", "\\")):
            return None  # a scheme (mailto:) or a folder; ``C:`` may start a path
        path = normalise_path(link) or None
        symbol = _label_symbol(groups["label"] or "")
    if groups.get("sym") is not None:
        symbol = _clean_symbol(groups["sym"] or "", _symbol_style(pattern, groups))
        if symbol is None:
            return None
    if path is None and symbol is None:
        return None
    start = _first_int(groups, "start")
    end = _first_int(groups, "end")
    span = text[match.start() : match.end()]
    return CodeReference(
        path, start, end if end is not None else start, symbol, span, match.start()
    )


def _mask(text: str, regex: re.Pattern[str]) -> str:
    """Blank out ``regex``'s matches (newlines kept) so offsets stay valid."""
    return regex.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def extract_references(text: str) -> list[CodeReference]:
    """The code references of ``text`` in order of first occurrence, without duplicates."""
    if not isinstance(text, str):
        raise TypeError(f"extract_references: text must be a string, got {type(text).__name__}")
    prose = _mask(_mask(text, _URL), _EMAIL)
    no_code = _mask(prose, _FENCE)
    found: list[CodeReference] = []
    for pattern in _PATTERNS:
        for match in pattern.regex.finditer(prose if pattern.scan_code_blocks else no_code):
            ref = _build(pattern, match, text)
            if ref is not None:
                found.append(ref)
    found.sort(key=lambda r: (r.offset, -len(r.text)))
    kept: list[CodeReference] = []
    seen: set[tuple[str | None, int | None, int | None, str | None]] = set()
    covered_to = -1
    for ref in found:
        if ref.offset < covered_to:
            continue  # overlaps a longer or earlier match
        covered_to = ref.offset + len(ref.text)
        if ref.key not in seen:
            seen.add(ref.key)
            kept.append(ref)
    return kept

"""git's ignore rules, entry by entry, as ``git status`` applies them while it walks
(docs/datasets.md#ignore-rules-and-skipped-files).

Why not a whole-path matcher: git decides for each directory entry it meets (file
or folder, it knows which) whether that entry is excluded, and never looks inside
an excluded folder. ``pathspec.GitIgnoreSpec`` answers for a whole path at once and
lets a folder pattern such as ``*/`` or ``build`` match every path below the
folder; that gives other answers than git for whitelists (``*``, ``!*.py``,
``!*/``) and for re-included files of an excluded folder (git: never). So each
pattern here matches the entry's own path only, and the walker prunes.

The rules, from git's ``dir.c`` and ``wildmatch.c`` (``gitignore(5)``):

- a line: blank or ``#…`` is nothing; trailing spaces go unless ``\\``-escaped;
  ``!`` negates; ``\\!`` and ``\\#`` are literal;
- a trailing ``/`` matches folders only; a pattern with no other ``/`` matches the
  entry's name at any depth; one with a leading or middle ``/`` matches the path
  relative to the ignore file's folder;
- ``*`` and ``?`` never match ``/``; ``[…]`` sets (``!``/``^`` negate, ranges,
  ``[:alpha:]`` classes) never match ``/``; a malformed set matches nothing;
  ``**`` between slashes (or at either end) spans folders, elsewhere it is ``*``;
- in one file the last matching line wins; a deeper ignore file wins over a
  shallower one; an entry no line matches is not excluded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLASSES = {
    "alnum": r"a-zA-Z0-9",
    "alpha": r"a-zA-Z",
    "blank": r" \t",
    "cntrl": r"\x00-\x1f\x7f",
    "digit": r"0-9",
    "graph": r"!-~",
    "lower": r"a-z",
    "print": r" -~",
    "punct": r"!-/:-@\[-`{-~",
    "space": r" \t\n\r\f\v",
    "upper": r"A-Z",
    "xdigit": r"0-9A-Fa-f",
}


class _Malformed(Exception):
    """The pattern can never match (git's ``WM_ABORT_ALL``)."""


@dataclass(frozen=True)
class Pattern:
    """One ignore line, compiled."""

    regex: re.Pattern[str]
    negative: bool
    dir_only: bool
    basename: bool
    """No ``/`` but a trailing one: the pattern matches an entry's name at any depth."""

    def matches(self, rel: str, name: str, is_dir: bool) -> bool:
        """Whether this pattern matches the entry itself (``rel``: its path relative to
        the ignore file's folder; ``name``: its last component)."""
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(name if self.basename else rel) is not None


def parse_line(line: str) -> Pattern | None:
    """A gitignore line compiled, or None for a blank, comment or never-matching line."""
    line = _trim_trailing_spaces(line)
    if not line or line.startswith("#"):
        return None
    negative = line.startswith("!")
    if negative:
        line = line[1:]
    dir_only = line.endswith("/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    basename = "/" not in line
    if line.startswith("/"):
        line = line[1:]
    try:
        regex = re.compile(_translate(line), re.DOTALL)
    except (_Malformed, re.error):
        return None
    return Pattern(regex, negative, dir_only, basename)


def parse_lines(lines: list[str] | tuple[str, ...]) -> tuple[Pattern, ...]:
    """Every line of one ignore file compiled (blank, comment and malformed lines dropped)."""
    return tuple(p for p in map(parse_line, lines) if p is not None)


def last_match(patterns: tuple[Pattern, ...], rel: str, is_dir: bool) -> bool | None:
    """The verdict of one ignore file on an entry: True excluded, False re-included
    (a ``!`` line), None when no line matches (the last matching line wins)."""
    name = rel.rpartition("/")[2]
    for pattern in reversed(patterns):
        if pattern.matches(rel, name, is_dir):
            return not pattern.negative
    return None


def _trim_trailing_spaces(line: str) -> str:
    """git's ``trim_trailing_spaces``: drop trailing spaces, keeping a ``\\``-escaped one."""
    end = 0
    i = 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            i += 2
            end = i
            continue
        if line[i] != " ":
            end = i + 1
        i += 1
    return line[:end]


def _translate(pat: str) -> str:
    """The regular expression of a wildmatch pattern with ``WM_PATHNAME`` (full match)."""
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "\\":
            if i + 1 >= n:
                raise _Malformed  # a trailing backslash matches nothing
            out.append(re.escape(pat[i + 1]))
            i += 2
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            at_start = i == 0 or pat[i - 1] == "/"
            if j - i >= 2 and at_start and j == n:
                out.append(".*")  # "…/**" or "**": everything below
            elif j - i >= 2 and at_start and pat[j] == "/":
                out.append("(?:.*/)?")  # "**/": zero or more folders
                j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "[":
            cls, i = _bracket(pat, i + 1)
            out.append(cls)
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _bracket(pat: str, i: int) -> tuple[str, int]:
    """The set that starts after the ``[`` at ``i - 1``: (regex, index past ``]``)."""
    n = len(pat)
    negated = i < n and pat[i] in "!^"
    if negated:
        i += 1
    parts: list[str] = []
    first = True
    prev: str | None = None
    while True:
        if i >= n:
            raise _Malformed  # no closing "]"
        c = pat[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "\\":
            if i + 1 >= n:
                raise _Malformed
            c = pat[i + 1]
            i += 2
        elif c == "-" and prev is not None and i + 1 < n and pat[i + 1] != "]":
            hi = pat[i + 1]
            i += 2
            if hi == "\\":
                if i >= n:
                    raise _Malformed
                hi = pat[i]
                i += 1
            if prev <= hi:
                parts.append(f"{re.escape(prev)}-{re.escape(hi)}")
            prev = None
            continue
        elif c == "[" and pat.startswith(":", i + 1):
            close = pat.find("]", i + 2)
            if close < 0:
                raise _Malformed
            if pat[close - 1] == ":" and close - 1 >= i + 2:
                name = pat[i + 2 : close - 1]
                if name not in _CLASSES:
                    raise _Malformed
                parts.append(_CLASSES[name])
                i = close + 1
                prev = None
                continue
            i += 1  # no ":]": the "[" is a plain member
        else:
            i += 1
        parts.append(re.escape(c))
        prev = c
    members = "".join(parts)
    if negated:
        return (f"[^/{members}]", i)
    return (f"(?!/)[{members}]" if members else "(?!)", i)

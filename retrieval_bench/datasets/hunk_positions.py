"""Where each hunk of a patch sits in the base file: found by its context, as the
patch tools do (docs/datasets.md#hunk-positions).

A hunk header's ``-start`` is where the diff *expected* its lines; a patch made
against a slightly different version (most upstream fix patches, rebased) still
applies when ``git apply`` or ``patch`` find the hunk's old lines — context and
removed lines — a few lines away. Reading the header as given would put the
change on the wrong lines and so name the wrong function, and the wrong gold
spans. :func:`locate_hunks` finds each hunk's old lines in the base text,
exactly (no fuzz, like ``git apply``), searching outward from the expected
position (the header's, moved by the previous hunk's offset, as GNU ``patch``
carries it), nearest first and forward before backward at equal distance, never
overlapping the previous hunk. A hunk whose old lines are nowhere in the file
does not apply: :class:`HunkError` says which.

Two anchors are kept as ``git apply`` keeps them: a hunk whose header starts at
line 0 or 1 must match at the beginning of the file, and a hunk without trailing
context lines (its last line is a change) must match at the end of the file.
A pure insertion (no old lines at all) cannot be located by its lines and keeps
the header's position, moved by the previous hunk's offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from unidiff import Hunk, PatchedFile

from retrieval_bench.errors import DatasetError


class HunkError(DatasetError):
    """A hunk whose old lines are not in the base file: the patch does not apply."""


@dataclass(frozen=True)
class LocatedHunk:
    """One hunk's place in the base file."""

    start: int
    """0-based index of the hunk's first old line in the base file (for a pure
    insertion: the index of the line the new lines go before)."""
    offset: int
    """``start`` minus the header's position (0: the hunk sits where it says)."""


def _body(value: str) -> str:
    """A diff line's text without its line break (``\\r`` kept, as the file has it)."""
    return value[:-1] if value.endswith("\n") else value


def base_lines(text: str) -> list[str]:
    """The base file's lines as the diff sees them: split at ``\\n`` only."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _matches(lines: Sequence[str], old: Sequence[str], at: int) -> bool:
    return lines[at : at + len(old)] == list(old)


def _search(lines: Sequence[str], old: Sequence[str], expected: int, lowest: int) -> int | None:
    """The position nearest ``expected`` (>= ``lowest``) where ``old`` sits in ``lines``."""
    highest = len(lines) - len(old)
    if highest < lowest:
        return None
    expected = min(max(expected, lowest), highest)
    for distance in range(max(expected - lowest, highest - expected) + 1):
        for at in (expected + distance, expected - distance):
            if lowest <= at <= highest and _matches(lines, old, at):
                return at
    return None


def _trailing_context(hunk: Hunk) -> int:
    """How many context lines follow the hunk's last change."""
    n = 0
    for ln in reversed(list(hunk)):
        if ln.is_added or ln.is_removed:
            break
        if ln.is_context:
            n += 1
    return n


def _anchor_of(hunk: Hunk) -> str:
    """``beginning`` or ``end``: where an anchored hunk must match."""
    return "beginning" if hunk.source_start <= 1 else "end"


def _anchored(lines: Sequence[str], old: Sequence[str], hunk: Hunk) -> int | None:
    """Where a hunk anchored at the file's beginning or end sits (None: it does not
    match there); -1 when the hunk has no anchor."""
    at_start = hunk.source_start <= 1
    at_end = _trailing_context(hunk) == 0
    if not (at_start or at_end):
        return -1
    place = 0 if at_start else len(lines) - len(old)
    if at_end and place + len(old) != len(lines):
        return None
    return place if place >= 0 and _matches(lines, old, place) else None


def locate_hunks(base: str, patched: PatchedFile, path: str = "") -> list[LocatedHunk]:
    """Each hunk of ``patched`` located in the ``base`` text (module doc); raise
    :class:`HunkError` naming the hunk when one does not apply."""
    lines = base_lines(base)
    out: list[LocatedHunk] = []
    offset, lowest = 0, 0
    for number, hunk in enumerate(patched, start=1):
        old = [_body(ln.value) for ln in hunk if ln.is_context or ln.is_removed]
        header = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        if not old:  # a pure insertion: nothing to find it by
            start = min(max(header + offset, lowest), len(lines))
        else:
            found = _anchored(lines, old, hunk)
            anchor = _anchor_of(hunk) if found != -1 else ""
            if found == -1:
                found = _search(lines, old, header + offset, lowest)
            elif found is not None and found < lowest:
                found = None
            if found is None:
                name = path or patched.path
                where = f" at the file's {anchor}, as git apply requires" if anchor else ""
                raise HunkError(
                    f"hunk {number} of {name} (@@ -{hunk.source_start},{hunk.source_length}) "
                    f"does not apply to the base file: its {len(old)} old line(s) are not "
                    f"there{where} (the patch was made against another version)"
                )
            start = found
        offset = start - header
        out.append(LocatedHunk(start, offset))
        lowest = start + len(old)
    return out

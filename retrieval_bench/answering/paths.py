"""Which repository file a path cited in an answer means.

:func:`resolve_path` maps a cited path to a repository path by matching path
components from the end (``auth.py`` → ``src/shopapi/auth.py``);
:func:`match_path` also reports the candidates when several files match. A
:class:`PathIndex` indexes a repository's files by name for many lookups.
What an answer cites is :mod:`retrieval_bench.answering.references`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["CitedPath", "PathIndex", "PathMatch", "match_path", "normalise_path", "resolve_path"]


class CitedPath(Protocol):
    """What :func:`match_path` reads of a reference: its cited path, if any (a
    :class:`~retrieval_bench.answering.references.CodeReference`, which imports
    this module, so it is named here only by what it has)."""

    @property
    def path(self) -> str | None: ...


def normalise_path(path: str) -> str:
    """Posix separators, no ``./`` or ``//``: ``.\\src\\a.py`` → ``src/a.py``."""
    posix = posixpath.normpath(path.strip().replace("\\", "/"))
    return "" if posix == "." else posix


@dataclass(frozen=True)
class PathMatch:
    """Which repository files a cited path can mean."""

    query: str
    candidates: tuple[str, ...]

    @property
    def path(self) -> str | None:
        """The one matching file; None when there is none or several."""
        return self.candidates[0] if len(self.candidates) == 1 else None

    @property
    def found(self) -> bool:
        return bool(self.candidates)

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


def _components(path: str) -> tuple[str, ...]:
    parts = normalise_path(path).split("/")
    return tuple(p for p in parts if p not in ("", ".", "..") and not re.fullmatch(r"[A-Za-z]:", p))


class PathIndex:
    """Repository paths indexed by file name, for repeated :meth:`match` calls."""

    def __init__(self, files: Iterable[str]):
        self._set = frozenset(normalise_path(f) for f in files)
        self.files = tuple(sorted(self._set))
        self._by_name: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for f in self.files:
            parts = tuple(f.split("/"))
            for name in {parts[-1], parts[-1].lower()}:
                self._by_name.setdefault(name, []).append((f, parts))

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and normalise_path(path) in self._set

    def _suffix_matches(self, parts: tuple[str, ...], fold: bool) -> tuple[str, ...]:
        want = tuple(p.lower() for p in parts) if fold else parts
        out = []
        for path, have in self._by_name.get(want[-1], []):
            tail = have[-len(want) :]
            if (tuple(p.lower() for p in tail) if fold else tail) == want:
                out.append(path)
        return tuple(sorted(set(out)))

    def match(self, path: str) -> PathMatch:
        """Files whose trailing components equal the cited path's (case-insensitive
        only when nothing matches exactly). An absolute path (``/home/me/repo/src/a.py``)
        also matches a repository path equal to one of its tails."""
        parts = _components(path)
        if not parts:
            return PathMatch(path, ())
        for fold in (False, True):
            found = self._suffix_matches(parts, fold)
            if found:
                return PathMatch(path, found)
        if re.match(r"([A-Za-z]:)?[\\/]|~", path.strip()):
            for i in range(1, len(parts)):
                tail = "/".join(parts[i:])
                if tail in self._set:
                    return PathMatch(path, (tail,))
        return PathMatch(path, ())


def _as_index(repo_files: Iterable[str] | PathIndex) -> PathIndex:
    return repo_files if isinstance(repo_files, PathIndex) else PathIndex(repo_files)


def match_path(ref: CitedPath | str, repo_files: Iterable[str] | PathIndex) -> PathMatch:
    """All repository files ``ref`` (a reference or a path) can mean."""
    path = ref if isinstance(ref, str) else ref.path
    if path is None:
        return PathMatch("", ())
    return _as_index(repo_files).match(path)


def resolve_path(ref: CitedPath | str, repo_files: Iterable[str] | PathIndex) -> str | None:
    """The one repository path ``ref`` means, or None (not found, or ambiguous — use
    :func:`match_path` to see the candidates). Pass a :class:`PathIndex` when resolving
    many references against one repository."""
    return match_path(ref, repo_files).path

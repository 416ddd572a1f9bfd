"""Walking a repository's files: ignore rules, binary and encoding checks
(docs/datasets.md#ignore-rules-and-skipped-files).

``.gitignore`` files (at any depth) and a project ignore file
``.rbenchignore`` (same syntax, root only) are obeyed, plus ``.git/``, each read
with git's rules (:mod:`retrieval_bench.gitignore`): the walk never enters a folder
git would not enter. A dataset's ``ignore:`` list drops more, and its ``include:``
globs keep only the files they match. Binary, empty and over-large files are
skipped with a recorded reason; non-UTF-8 text is decoded with replacement
characters and flagged, so one bad file never stops a build.

A run over many snapshots of one repository walks mostly the same paths under
the same rules, and (in ``repo-trees``, docs/architecture.md#caches) the same
read-only files hardlinked from one store. So the process memoises both: the
verdict of a set of ignore rules on a path, and what was read from a read-only
file with several links (by device, inode, size and modification time; any other
file is always read again). Both are bounded and give what the walk would compute.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from retrieval_bench import gitignore
from retrieval_bench.errors import ConfigError

IGNORE_FILES = (".gitignore", ".rbenchignore")
ALWAYS_IGNORED = (".git/", ".hg/", ".svn/", ".rbench/")
DEFAULT_MAX_BYTES = 1_000_000
_SNIFF_BYTES = 8192
_MEMO_BYTES = 64 << 20
"""Text the read memo holds (and verdicts the ignore memo holds) before it starts afresh."""
_VERDICTS: dict[tuple[tuple[str, tuple[str, ...]], ...], dict[str, bool]] = {}
_READ: dict[tuple[int, int, int, int, int], tuple[str | None, str, bool]] = {}
"""(device, inode, size, mtime, max_bytes) of a read-only file → what :func:`_read` gave."""
_read_held = 0


@dataclass(frozen=True)
class SourceFile:
    """A text file of the repository, ready to chunk."""

    path: str
    """Path relative to the repository root, with forward slashes."""
    text: str
    sha256: str
    decode_errors: bool = False
    """True when the bytes were not valid UTF-8 and were decoded with replacements."""


@dataclass
class WalkReport:
    """Which files were skipped and why (path → reason)."""

    skipped: dict[str, str] = field(default_factory=dict)
    non_utf8: list[str] = field(default_factory=list)


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first 8 KiB marks a file as binary (git's heuristic)."""
    return b"\x00" in head


def _load_lines(path: Path) -> list[str]:
    """An ignore file's lines as git reads them: split on LF only, one CR before it
    dropped, a UTF-8 byte order mark skipped; an unreadable file has none."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return []
    text = text.removeprefix("\ufeff")
    return [line.removesuffix("\r") for line in text.split("\n")]


def include_spec(include: tuple[str, ...] | list[str]) -> pathspec.GitIgnoreSpec | None:
    """The compiled ``include`` globs (None when there are none), or a one-line
    :class:`ConfigError` for one that cannot select anything."""
    for glob in include:
        if not glob.strip() or glob.lstrip().startswith(("!", "#")):
            raise ConfigError(
                f"include: {glob!r} selects no file; give globs such as '*.py' or 'src/' "
                "(to drop files, use ignore:)"
            )
        try:
            pathspec.GitIgnoreSpec.from_lines([glob])
        except (ValueError, re.error):  # pathspec's GitIgnorePatternError; "[z-a]"
            raise ConfigError(
                f"include: {glob!r} is not a valid glob; give globs such as '*.py' or 'src/'"
            ) from None
    return pathspec.GitIgnoreSpec.from_lines(include) if include else None


def check_include(include: list[str]) -> list[str]:
    """``include`` as given, or a one-line :class:`ConfigError` (a config's check)."""
    include_spec(include)
    return include


class IgnoreRules:
    """Which entries of a tree the walk drops (docs/datasets.md#ignore-rules-and-skipped-files).

    Three lists, each read with git's rules (:mod:`retrieval_bench.gitignore`): the
    repository's ``.gitignore`` files (a deeper file wins over a shallower one), the
    root's ``.rbenchignore``, and ``extra_patterns`` (a dataset's ``ignore:``); an
    entry any of them excludes is dropped, so the extra lists only ever drop more.
    ``include`` (gitignore-style globs, e.g. ``*.py``) then keeps a file only when
    one of them matches it (a folder pattern matches the files below it).
    """

    def __init__(
        self, root: Path, extra_patterns: tuple[str, ...] = (), include: tuple[str, ...] = ()
    ):
        self.root = root
        self._always = gitignore.parse_lines(ALWAYS_IGNORED)
        self._extra = gitignore.parse_lines(tuple(extra_patterns))
        self._project: tuple[gitignore.Pattern, ...] = ()
        self._git: list[tuple[str, tuple[gitignore.Pattern, ...]]] = []
        """(folder, patterns) of every ``.gitignore`` read, deepest last."""
        self._include = include_spec(include)
        self._key: tuple[tuple[str, tuple[str, ...]], ...] = (
            ("\0extra", tuple(extra_patterns)),
            ("\0include", tuple(include)),
        )
        self._verdicts = _verdicts(self._key)

    def add_dir(self, rel_dir: str) -> None:
        """Load the ignore files found in one directory (relative path, '' = root)."""
        folder = self.root / rel_dir if rel_dir else self.root
        for name in IGNORE_FILES:
            if name == ".rbenchignore" and rel_dir:
                continue
            lines = _load_lines(folder / name)
            patterns = gitignore.parse_lines(lines)
            if not patterns:
                continue
            if name == ".rbenchignore":
                self._project = patterns
            else:
                self._git.append((rel_dir, patterns))
            self._key = (*self._key, (f"{rel_dir}\0{name}", tuple(lines)))
            self._verdicts = _verdicts(self._key)

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        """Whether the walk drops this entry (a folder: and everything below it)."""
        candidate = rel_path + "/" if is_dir else rel_path
        verdict = self._verdicts.get(candidate)
        if verdict is None:
            verdict = self._verdicts[candidate] = self._match(rel_path, is_dir)
        return verdict

    def _match(self, rel: str, is_dir: bool) -> bool:
        for patterns in (self._always, self._project, self._extra):
            if gitignore.last_match(patterns, rel, is_dir):
                return True
        for base, patterns in reversed(self._git):
            if base and not rel.startswith(base + "/"):
                continue
            verdict = gitignore.last_match(patterns, rel[len(base) + 1 :] if base else rel, is_dir)
            if verdict is not None:
                if verdict:
                    return True
                break
        return not is_dir and self._include is not None and not self._include.match_file(rel)


def _verdicts(key: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, bool]:
    """The process's verdicts of the ignore rules ``key`` (base folder, lines per file)."""
    if sum(len(v) for v in _VERDICTS.values()) > _MEMO_BYTES >> 8:
        _VERDICTS.clear()
    return _VERDICTS.setdefault(key, {})


def walk_kept(root: Path, rules: IgnoreRules) -> Iterator[str]:
    """The relative paths of the entries that are not folders which ``rules`` keep, as
    git walks: an excluded folder is never entered (so nothing below it comes back,
    whatever a later ``!`` line says); symlinked folders are not followed. Each
    folder's files come in sorted order, before its sorted subfolders."""
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        rules.add_dir(rel_dir)
        dirnames[:] = [
            d
            for d in sorted(dirnames)
            if not os.path.islink(os.path.join(dirpath, d))
            and not rules.ignored(f"{rel_dir}/{d}" if rel_dir else d, is_dir=True)
        ]
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not rules.ignored(rel):
                yield rel


def iter_source_files(
    root: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    extra_ignore: tuple[str, ...] = (),
    include: tuple[str, ...] = (),
    report: WalkReport | None = None,
) -> Iterator[SourceFile]:
    """Yield the repository's text files (in :func:`walk_kept`'s order)."""
    root = Path(root)
    rules = IgnoreRules(root, tuple(extra_ignore), tuple(include))
    report = report if report is not None else WalkReport()
    for rel in walk_kept(root, rules):
        source = read_source_file(root, rel, max_bytes=max_bytes, report=report)
        if source is not None:
            yield source


def read_source_file(
    root: Path, rel: str, *, max_bytes: int = DEFAULT_MAX_BYTES, report: WalkReport | None = None
) -> SourceFile | None:
    """Read one file, or record why it is skipped and return None."""
    report = report if report is not None else WalkReport()
    full = os.path.join(root, rel)
    try:
        st = os.lstat(full)
        if not stat.S_ISREG(st.st_mode):
            report.skipped[rel] = "not a regular file"
            return None
    except OSError:
        report.skipped[rel] = "not a regular file"
        return None
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, max_bytes)
    # only a read-only file with several links (a tree's file in the blob store): its
    # bytes never change, and its modification time (when the blob was written) tells
    # it from a file that once had its inode
    shared = not st.st_mode & 0o222 and st.st_nlink > 1
    found = _READ.get(key) if shared else None
    if found is None:
        found = _read(full, st.st_size, max_bytes)
        if shared and not found[1].startswith("unreadable"):
            _remember(key, found)
    text, sha_or_reason, bad = found
    if bad:
        report.non_utf8.append(rel)
    if text is None:
        report.skipped[rel] = sha_or_reason
        return None
    return SourceFile(rel, text, sha_or_reason, bad)


def _read(full: str, size: int, max_bytes: int) -> tuple[str | None, str, bool]:
    """``(text, sha256, not UTF-8)`` of a regular file, or ``(None, why it is skipped,
    not UTF-8)``."""
    if size == 0:
        return None, "empty", False
    if size > max_bytes:
        return None, f"larger than {max_bytes} bytes", False
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}", False
    if is_binary(data[:_SNIFF_BYTES]):
        return None, "binary", False
    try:
        text = data.decode("utf-8")
        bad = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        bad = True
    if not text.strip():
        return None, "empty", bad
    return text, hashlib.sha256(data).hexdigest(), bad


def _remember(key: tuple[int, int, int, int, int], found: tuple[str | None, str, bool]) -> None:
    global _read_held
    size = len(found[0] or "")
    if _read_held + size > _MEMO_BYTES:
        _READ.clear()
        _read_held = 0
    _READ[key] = found
    _read_held += size

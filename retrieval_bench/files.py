"""Walking a repository's files: ignore rules, binary and encoding checks
(docs/datasets.md#ignore-rules-and-skipped-files).

``.gitignore`` files (at any depth) and a project ignore file
``.rbenchignore`` (same syntax, root only) are obeyed, plus ``.git/``.
Binary, empty and over-large files are skipped with a recorded reason;
non-UTF-8 text is decoded with replacement characters and flagged, so one
bad file never stops a build.

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
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

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


def _load_spec(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class IgnoreRules:
    """gitignore-style rules gathered from every ignore file under a root."""

    def __init__(self, root: Path, extra_patterns: tuple[str, ...] = ()):
        self.root = root
        self._specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        base = list(ALWAYS_IGNORED) + list(extra_patterns)
        self._specs.append(("", pathspec.GitIgnoreSpec.from_lines(base)))
        self._key: tuple[tuple[str, tuple[str, ...]], ...] = (("", tuple(base)),)
        self._verdicts = _verdicts(self._key)

    def add_dir(self, rel_dir: str) -> None:
        """Load the ignore files found in one directory (relative path, '' = root)."""
        folder = self.root / rel_dir if rel_dir else self.root
        for name in IGNORE_FILES:
            if name == ".rbenchignore" and rel_dir:
                continue
            lines = _load_spec(folder / name)
            if lines:
                self._specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
                self._key = (*self._key, (rel_dir, tuple(lines)))
                self._verdicts = _verdicts(self._key)

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        candidate = rel_path + "/" if is_dir else rel_path
        verdict = self._verdicts.get(candidate)
        if verdict is None:
            verdict = self._verdicts[candidate] = self._match(candidate)
        return verdict

    def _match(self, candidate: str) -> bool:
        for base, spec in self._specs:
            if base:
                if not candidate.startswith(base + "/"):
                    continue
                sub = candidate[len(base) + 1 :]
            else:
                sub = candidate
            if spec.match_file(sub):
                return True
        return False


def _verdicts(key: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, bool]:
    """The process's verdicts of the ignore rules ``key`` (base folder, lines per file)."""
    if sum(len(v) for v in _VERDICTS.values()) > _MEMO_BYTES >> 8:
        _VERDICTS.clear()
    return _VERDICTS.setdefault(key, {})


def iter_source_files(
    root: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    extra_ignore: tuple[str, ...] = (),
    report: WalkReport | None = None,
) -> Iterator[SourceFile]:
    """Yield the repository's text files in sorted path order."""
    root = Path(root)
    rules = IgnoreRules(root, extra_ignore)
    report = report if report is not None else WalkReport()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        rules.add_dir(rel_dir)
        kept = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if not rules.ignored(rel, is_dir=True) and not os.path.islink(os.path.join(dirpath, d)):
                kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rules.ignored(rel):
                continue
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

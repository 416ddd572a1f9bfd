"""Walking a repository's files: ignore rules, binary and encoding checks
(docs/datasets.md#ignore-rules-and-skipped-files).

``.gitignore`` files (at any depth) and a project ignore file
``.rbenchignore`` (same syntax, root only) are obeyed, plus ``.git/``.
Binary, empty and over-large files are skipped with a recorded reason;
non-UTF-8 text is decoded with replacement characters and flagged, so one
bad file never stops a build.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

IGNORE_FILES = (".gitignore", ".rbenchignore")
ALWAYS_IGNORED = (".git/", ".hg/", ".svn/", ".rbench/")
DEFAULT_MAX_BYTES = 1_000_000
_SNIFF_BYTES = 8192


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

    def add_dir(self, rel_dir: str) -> None:
        """Load the ignore files found in one directory (relative path, '' = root)."""
        folder = self.root / rel_dir if rel_dir else self.root
        for name in IGNORE_FILES:
            if name == ".rbenchignore" and rel_dir:
                continue
            lines = _load_spec(folder / name)
            if lines:
                self._specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        candidate = rel_path + "/" if is_dir else rel_path
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
    full = Path(root) / rel
    try:
        if full.is_symlink() or not full.is_file():
            report.skipped[rel] = "not a regular file"
            return None
        size = full.stat().st_size
        if size == 0:
            report.skipped[rel] = "empty"
            return None
        if size > max_bytes:
            report.skipped[rel] = f"larger than {max_bytes} bytes"
            return None
        data = full.read_bytes()
    except OSError as exc:
        report.skipped[rel] = f"unreadable: {exc.strerror or exc}"
        return None
    if is_binary(data[:_SNIFF_BYTES]):
        report.skipped[rel] = "binary"
        return None
    try:
        text = data.decode("utf-8")
        bad = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        bad = True
        report.non_utf8.append(rel)
    if not text.strip():
        report.skipped[rel] = "empty"
        return None
    return SourceFile(rel, text, hashlib.sha256(data).hexdigest(), bad)

"""Import SWE-bench-style rows as labelled questions (docs/datasets.md#swe-bench-import).

A row has ``instance_id, repo, base_commit, problem_statement, patch``. The
question is the problem statement; the gold files are the files the patch
*modifies* in the base commit: added and deleted files are left out, a renamed
file counts under its old path (the path that exists at ``base_commit``). Gold
spans are the old-file line ranges of the hunks: where their context lines sit
in the base file when the base files can be read (``--repo``; a hunk that does
not apply fails its row), else the hunk headers' (``@@ -start,len``).
Rows with a missing, non-string or empty field, a patch that is not a unified
diff, or a patch that modifies no existing file become :class:`RowError` s,
each saying which; the other rows import.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_bench.datasets.jsonl import LoadResult, collect_examples, jsonl_rows
from retrieval_bench.errors import DatasetError
from retrieval_bench.types import Example, Span

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "patch")
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.[A-Za-z]+$|(^|/)conftest\.py$"
)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def is_test_path(path: str) -> bool:
    """True for files in test folders, ``test_*`` / ``*_test.*`` files and ``conftest.py``."""
    return bool(TEST_PATH.search(path))


@dataclass(frozen=True)
class Hunk:
    """One ``@@ -old_start,old_len +new_start,new_len @@`` hunk."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int

    def old_span(self, path: str) -> Span:
        """The old-file lines the hunk covers (a pure insertion: the line it follows)."""
        start = max(self.old_start, 1)
        return Span(path, start, start + max(self.old_len, 1) - 1)


@dataclass
class FileDiff:
    """The part of a patch about one file. ``None`` stands for ``/dev/null``."""

    old_path: str | None = None
    new_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    added: bool = False
    deleted: bool = False

    @property
    def status(self) -> str:
        """``A`` added, ``D`` deleted, ``R`` renamed (or copied), ``M`` modified."""
        if self.added or self.old_path is None:
            return "A"
        if self.deleted or self.new_path is None:
            return "D"
        return "R" if self.old_path != self.new_path else "M"


def _unquote(text: str) -> str:
    """Undo git's C-style quoting of a path (``"a/caf\\303\\251.py"``)."""
    if not (len(text) >= 2 and text[0] == text[-1] == '"'):
        return text
    out, raw, i, body = [], bytearray(), 0, text[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                raw.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            ch, i = _ESCAPES.get(nxt, nxt), i + 1
        if raw:
            out.append(raw.decode("utf-8", errors="replace"))
            raw.clear()
        out.append(ch)
        i += 1
    out.append(raw.decode("utf-8", errors="replace"))
    return "".join(out)


def _marker_path(text: str, prefix: str) -> str | None:
    """The path of a ``---``/``+++`` line (timestamps dropped, ``a/``/``b/`` stripped)."""
    text = text.rstrip("\n")
    text = _unquote(text) if text.startswith('"') else text.split("\t", 1)[0].rstrip()
    if text == "/dev/null":
        return None
    return text[len(prefix) :] if text.startswith(prefix) else text


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    """Both paths of ``diff --git a/x b/y``; ---/+++ and rename lines refine them later."""
    if rest.startswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        if len(parts) == 2:
            return _marker_path(parts[0], "a/"), _marker_path(parts[1], "b/")
    half = (len(rest) - 1) // 2
    if (
        rest[half : half + 1] == " "
        and rest[:half].startswith("a/")
        and rest[2:half] == rest[half + 3 :]
    ):
        return rest[2:half], rest[2:half]
    old, sep, new = rest.partition(" b/")
    return (old[2:] if old.startswith("a/") else old), (new if sep else None)


def parse_patch(patch: str) -> list[FileDiff]:
    """Split a unified diff (git-style or plain ``---``/``+++``) into per-file parts.

    Hunk bodies are consumed by their line counts, so a removed line that
    starts with ``-- `` is never mistaken for a file header.
    """
    files: list[FileDiff] = []
    current: FileDiff | None = None
    seen_markers = False
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            current = FileDiff(*_git_header_paths(line[len("diff --git ") :]))
            files.append(current)
            seen_markers = False
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is None or seen_markers or current.hunks:
                current = FileDiff()
                files.append(current)
            current.old_path = _marker_path(line[4:], "a/")
            current.new_path = _marker_path(lines[i + 1][4:], "b/")
            seen_markers = True
            i += 1
        elif current is not None and (match := _HUNK.match(line)):
            old_len = 1 if match[2] is None else int(match[2])
            new_len = 1 if match[4] is None else int(match[4])
            current.hunks.append(Hunk(int(match[1]), old_len, int(match[3]), new_len))
            i = _skip_hunk_body(lines, i + 1, old_len, new_len) - 1
        elif current is not None:
            _apply_extended_header(current, line)
        i += 1
    return files


def _skip_hunk_body(lines: list[str], i: int, old_left: int, new_left: int) -> int:
    """Index of the first line after a hunk body with the given line counts."""
    while i < len(lines) and (old_left > 0 or new_left > 0):
        tag = lines[i][:1]
        if tag == "-":
            old_left -= 1
        elif tag == "+":
            new_left -= 1
        elif tag in (" ", ""):
            old_left, new_left = old_left - 1, new_left - 1
        elif tag != "\\":  # "\ No newline at end of file" counts for nothing
            break
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    return i


def _apply_extended_header(diff: FileDiff, line: str) -> None:
    if line.startswith("new file mode"):
        diff.added = True
    elif line.startswith("deleted file mode"):
        diff.deleted = True
    elif line.startswith(("rename from ", "copy from ")):
        diff.old_path = _unquote(line.split(" ", 2)[2])
        diff.added = diff.added or line.startswith("copy")  # a copy leaves its source as is
    elif line.startswith(("rename to ", "copy to ")):
        diff.new_path = _unquote(line.split(" ", 2)[2])


def gold_from_patch(
    patch: str, *, drop_tests: bool = False
) -> tuple[tuple[str, ...], tuple[Span, ...]]:
    """Files the patch modifies (old paths) and the old-file spans of their hunks."""
    files: dict[str, None] = {}
    spans: list[Span] = []
    for diff in parse_patch(patch):
        if diff.status not in ("M", "R") or diff.old_path is None:
            continue
        if drop_tests and is_test_path(diff.old_path):
            continue
        files[diff.old_path] = None
        spans.extend(h.old_span(diff.old_path) for h in diff.hunks)
    return tuple(files), tuple(spans)


def located_spans(
    patch: str, base_source: Callable[[str], str | None], gold_files: Iterable[str]
) -> tuple[Span, ...]:
    """The old-file spans of the hunks of the ``gold_files``, each hunk located by its
    context in the base file (docs/datasets.md#hunk-positions); a file the base does
    not have keeps its headers' positions. Raise
    :class:`~retrieval_bench.datasets.hunk_positions.HunkError` for a hunk that does
    not apply."""
    from retrieval_bench.datasets.gold_functions import read_patch
    from retrieval_bench.datasets.hunk_positions import locate_hunks

    wanted = set(gold_files)
    spans: list[Span] = []
    for pf in read_patch(patch):
        path = _marker_path(pf.source_file, "a/")
        if path not in wanted or pf.is_added_file or pf.is_removed_file:
            continue
        text = base_source(path)
        if text is None:
            spans.extend(
                Hunk(h.source_start, h.source_length, h.target_start, h.target_length).old_span(
                    path
                )
                for h in pf
            )
            continue
        for hunk, place in zip(pf, locate_hunks(text, pf, path), strict=True):
            if hunk.source_length:
                spans.append(Span(path, place.start + 1, place.start + hunk.source_length))
            else:  # a pure insertion: the line it follows
                spans.append(Span(path, max(place.start, 1), max(place.start, 1)))
    return tuple(spans)


def _field_problems(row: dict[str, Any]) -> list[str]:
    """What is wrong with the required fields, each said as it is: missing, not a
    string (``patch is not a string (got int)``) or empty."""
    missing = [k for k in REQUIRED if row.get(k) is None]
    typed = [k for k in REQUIRED if k not in missing and not isinstance(row[k], str)]
    empty = [k for k in REQUIRED if isinstance(row.get(k), str) and not row[k].strip()]
    problems = [f"missing field(s): {', '.join(missing)}"] if missing else []
    problems += [f"{k} is not a string (got {type(row[k]).__name__})" for k in typed]
    problems += [f"empty field(s): {', '.join(empty)}"] if empty else []
    return problems


BaseSource = Callable[[str, str, str], str | None]
"""``(repo, commit, path) -> the file's text at that commit`` (None: not there)."""


def git_base_source(repos: Mapping[str, str | Path]) -> BaseSource:
    """Base files read from local clones or mirrors (``owner/name`` → folder) with
    ``git show COMMIT:PATH``; a repository not given, or a missing file, is None."""

    from retrieval_bench.datasets.gold_functions import at_commit

    def show(repo: str, commit: str, path: str) -> str | None:
        folder = repos.get(repo)
        return None if folder is None else at_commit(folder, commit)(path)

    return show


def example_from_swebench(
    row: Any, *, drop_tests: bool = False, base_source: BaseSource | None = None
) -> Example:
    """One SWE-bench row as an :class:`Example`; raise ``ValueError`` saying what is wrong.
    With ``base_source``, its gold functions are derived from the patch on the base
    commit's files (docs/metrics.md#function-and-module-level), in its gold files."""
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    problems = _field_problems(row)
    if problems:
        name = row.get("instance_id")
        where = f"instance {name!r}: " if isinstance(name, str) and name.strip() else ""
        raise ValueError(where + "; ".join(problems))
    if not any(d.old_path or d.new_path for d in parse_patch(row["patch"])):
        raise ValueError(
            f"instance {row['instance_id']!r}: patch is not a unified diff "
            "(no ---/+++ file headers)"
        )
    gold_files, gold_spans = gold_from_patch(row["patch"], drop_tests=drop_tests)
    if not gold_files:
        raise ValueError(
            f"instance {row['instance_id']!r}: the patch modifies no existing "
            f"{'non-test ' if drop_tests else ''}file (it only adds or deletes files)"
        )
    repo, commit = row["repo"].strip(), row["base_commit"].strip()
    split = row.get("split")
    functions: tuple[str, ...] = ()
    locagent: tuple[str, ...] | None = None
    if base_source is not None:
        from retrieval_bench.datasets.gold_functions import entities_in, file_changes
        from retrieval_bench.datasets.gold_locagent import locagent_in

        @functools.cache
        def base(path: str) -> str | None:  # each base file read once for spans and both golds
            return base_source(repo, commit, path)

        try:
            gold_spans = located_spans(row["patch"], base, gold_files)
            changes = file_changes(row["patch"], base)
            found, by_locagent = entities_in(changes), locagent_in(changes)
        except DatasetError as exc:
            raise ValueError(f"instance {row['instance_id']!r}: {exc}") from None
        functions = tuple(f for f in found if f.rpartition(":")[0] in gold_files)
        locagent = tuple(f for f in by_locagent if f.rpartition(":")[0] in gold_files)
    return Example(
        id=row["instance_id"].strip(),
        query=row["problem_statement"],
        gold_files=gold_files,
        gold_spans=gold_spans,
        split=split if isinstance(split, str) else None,
        meta={"repo": repo, "commit": commit},  # the state asked about (commit_is: state)
        gold_functions=functions,
        gold_functions_locagent=locagent,
    )


def _read_rows(path: Path) -> Iterator[tuple[int, Any | json.JSONDecodeError]]:
    """(line or row number, decoded row or the decode error) from a JSON or JSONL file."""
    if path.suffix.lower() == ".parquet":
        yield from _parquet_rows(path)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError(f"SWE-bench file {path} does not exist: check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"SWE-bench file {path} cannot be read as UTF-8 text: {exc}") from exc
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):  # a JSON array: numbers are 1-based row indexes
        yield from enumerate(whole, start=1)
        return
    if isinstance(whole, dict):  # one (maybe pretty-printed) object
        yield 1, whole
        return
    yield from jsonl_rows(text)


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(1-based row number, row dict) of a parquet file (the Hugging Face SWE-bench form)."""
    if not path.is_file():
        raise DatasetError(f"SWE-bench file {path} does not exist: check the path")
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DatasetError(f"reading {path} needs pyarrow: pip install pyarrow") from exc
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own error types for bad files
        raise DatasetError(f"SWE-bench file {path} is not a readable parquet file: {exc}") from exc
    yield from enumerate(rows, start=1)


def import_rows(
    rows: Iterable[tuple[int, Any]],
    *,
    drop_tests: bool = False,
    base_source: BaseSource | None = None,
) -> LoadResult:
    """Numbered rows → examples; bad rows and repeated instance ids become errors."""

    def convert(row: Any) -> Example:
        return example_from_swebench(row, drop_tests=drop_tests, base_source=base_source)

    return collect_examples(rows, convert, "instance_id")


def load_swebench(
    path: str | Path, *, drop_tests: bool = False, base_source: BaseSource | None = None
) -> LoadResult:
    """Import a SWE-bench JSON array, JSONL or parquet file.

    ``drop_tests`` drops test files from gold; ``base_source`` derives gold functions.
    """
    return import_rows(_read_rows(Path(path)), drop_tests=drop_tests, base_source=base_source)

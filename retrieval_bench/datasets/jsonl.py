"""The dataset format: labelled questions in JSONL (docs/datasets.md#the-question-jsonl-format).

One JSON object per line::

    {"id": "q1", "query": "...", "gold_files": ["a.py"],
     "gold_spans": [{"path": "a.py", "start_line": 3, "end_line": 9}],   # optional
     "reference_answer": "...", "split": "dev",                          # optional
     "leaks_path": false, "commit": "..."}                               # extra keys → meta

``gold_spans`` items may also be ``[path, start_line, end_line]``. A malformed
row (bad JSON, missing or empty ``id``/``query``/``gold_files``, wrong types,
a duplicate id, a bad span) is reported as a :class:`RowError` with its
1-based line number, and the other rows still load. Blank lines are ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from retrieval_bench.errors import DatasetError
from retrieval_bench.identifiers import entity_problem, repo_path_problem
from retrieval_bench.store.io import write_text_atomically
from retrieval_bench.types import Example, Span

CORE_KEYS = (
    "id", "query", "gold_files", "gold_spans", "reference_answer", "split", "gold_functions",
    "gold_functions_locagent",
)  # fmt: skip


@dataclass(frozen=True)
class RowError:
    """A row that could not be loaded: its 1-based line (or row) number and why."""

    line_no: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.message}"


@dataclass
class LoadResult:
    """The examples that loaded, and one error per row that did not."""

    examples: list[Example] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)


class RowProblem(ValueError):
    """Raised by the row parsers; becomes a :class:`RowError` with the row's line number."""


def load_examples(path: str | Path) -> LoadResult:
    """Read a dataset JSONL file; malformed rows become errors, the rest load."""
    text = read_text_file(Path(path), "dataset file")
    return collect_examples(jsonl_rows(text), example_from_row)


def read_text_file(path: Path, what: str) -> str:
    """The UTF-8 text of a JSONL input file; a missing file, a folder, non-UTF-8
    bytes or an unreadable file raise :class:`DatasetError` saying what to do."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError(f"{what} {path} does not exist: check the path") from exc
    except IsADirectoryError as exc:
        raise DatasetError(f"{what} {path} is a folder: pass a .jsonl file") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{what} {path} is not UTF-8 text: re-save it as UTF-8") from exc
    except OSError as exc:
        raise DatasetError(
            f"{what} {path} cannot be read ({exc.strerror or exc}): check its permissions"
        ) from exc


def jsonl_rows(text: str) -> Iterator[tuple[int, Any]]:
    """(1-based line number, decoded row or the JSON error) for each non-blank line."""
    for line_no, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as exc:
                yield line_no, exc


def collect_examples(
    rows: Iterable[tuple[int, Any]],
    convert: Callable[[Any], Example],
    id_label: str = "id",
) -> LoadResult:
    r"""Numbered rows → examples. Undecodable rows, rows ``convert`` rejects
    (``ValueError``) and repeated ids become :class:`RowError`\ s; the rest load."""
    result = LoadResult()
    first: dict[str, int] = {}
    for number, row in rows:
        if isinstance(row, json.JSONDecodeError):
            result.errors.append(RowError(number, f"invalid JSON: {row.msg} (column {row.colno})"))
            continue
        try:
            example = convert(row)
        except ValueError as exc:
            result.errors.append(RowError(number, str(exc)))
            continue
        if example.id in first:
            msg = f"duplicate {id_label} {example.id!r} (first on line {first[example.id]})"
            result.errors.append(RowError(number, msg))
            continue
        first[example.id] = number
        result.examples.append(example)
    return result


def example_from_row(row: Any) -> Example:
    """Validate one decoded row and build its :class:`Example`; raise :class:`RowProblem`."""
    if not isinstance(row, dict):
        raise RowProblem(f"expected a JSON object, got {type(row).__name__}")
    qid = row.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        raise RowProblem("missing or empty 'id' (a non-empty string)")
    query = row.get("query")
    if not isinstance(query, str) or not query.strip():
        raise RowProblem(f"id {qid!r}: missing or empty 'query' (a non-empty string)")
    gold = row.get("gold_files")
    if not isinstance(gold, list) or not gold:
        raise RowProblem(f"id {qid!r}: 'gold_files' must be a non-empty list of paths")
    if not all(isinstance(p, str) and p.strip() for p in gold):
        raise RowProblem(f"id {qid!r}: 'gold_files' must hold non-empty strings")
    gold_files = tuple(dict.fromkeys(normalize_path(p) for p in gold))
    for path in gold_files:
        problem = repo_path_problem(path)
        if problem is not None:
            raise RowProblem(f"id {qid!r}: gold_files: {problem}")
    spans = parse_spans(row.get("gold_spans"), qid)
    outside = sorted({s.path for s in spans} - set(gold_files))
    if outside:
        raise RowProblem(f"id {qid!r}: gold span paths not in gold_files: {', '.join(outside)}")
    optional: dict[str, str | None] = {}
    for key in ("reference_answer", "split"):
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            raise RowProblem(f"id {qid!r}: {key!r} must be a string or null")
        optional[key] = value
    meta = {k: v for k, v in row.items() if k not in CORE_KEYS}
    return Example(
        id=qid,
        query=query,
        gold_files=gold_files,
        gold_spans=spans,
        reference_answer=optional["reference_answer"],
        split=optional["split"],
        meta=meta,
        gold_functions=parse_entities(row.get("gold_functions"), qid),
        gold_functions_locagent=derived_entities(row, qid),
    )


def derived_entities(row: Mapping[str, Any], qid: str) -> tuple[str, ...] | None:
    """``gold_functions_locagent`` of a row: None when absent (not derived), else its
    entities (an empty list: derived, none found)."""
    key = "gold_functions_locagent"
    return None if row.get(key) is None else parse_entities(row[key], qid, key)


def parse_entities(value: Any, qid: str, key: str = "gold_functions") -> tuple[str, ...]:
    """``gold_functions``: a list of ``path:Qualified.name`` strings (None: none), the
    path inside the repository (:func:`~retrieval_bench.identifiers.entity_problem`)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowProblem(f"id {qid!r}: {key!r} must be a list of 'path:Qualified.name' strings")
    entities = [f"{normalize_path(v.rpartition(':')[0])}:{v.rpartition(':')[2]}" for v in value]
    for raw, entity in zip(value, entities, strict=True):
        problem = entity_problem(entity if ":" in raw else raw)
        if problem is not None:
            raise RowProblem(f"id {qid!r}: {key}: {problem}")
    return tuple(dict.fromkeys(entities))


def normalize_path(path: str) -> str:
    """Forward slashes, no leading ``./``: the form snapshot paths use."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_spans(value: Any, qid: str) -> tuple[Span, ...]:
    """``gold_spans`` as {path, start_line, end_line} objects or [path, start, end] triples."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RowProblem(f"id {qid!r}: 'gold_spans' must be a list")
    spans = []
    for i, item in enumerate(value):
        parts: list[Any]
        if isinstance(item, dict):
            parts = [item.get("path"), item.get("start_line"), item.get("end_line")]
        elif isinstance(item, list) and len(item) == 3:
            parts = list(item)
        else:
            raise RowProblem(
                f"id {qid!r}: gold_spans[{i}] must be {{path, start_line, end_line}} "
                "or [path, start, end]"
            )
        path, start, end = parts
        if not isinstance(path, str) or not path.strip():
            raise RowProblem(f"id {qid!r}: gold_spans[{i}] has no path")
        if not (_is_line(start) and _is_line(end)) or start > end:
            raise RowProblem(
                f"id {qid!r}: gold_spans[{i}] needs lines 1 <= start_line <= end_line, "
                f"got {start!r}..{end!r}"
            )
        spans.append(Span(normalize_path(path), start, end))
    return tuple(spans)


def _is_line(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def example_to_row(example: Example) -> dict[str, Any]:
    """The JSON object for one example (inverse of :func:`example_from_row`)."""
    row: dict[str, Any] = {
        "id": example.id,
        "query": example.query,
        "gold_files": list(example.gold_files),
    }
    if example.gold_spans:
        row["gold_spans"] = [
            {"path": s.path, "start_line": s.start_line, "end_line": s.end_line}
            for s in example.gold_spans
        ]
    if example.reference_answer is not None:
        row["reference_answer"] = example.reference_answer
    if example.split is not None:
        row["split"] = example.split
    if example.gold_functions:
        row["gold_functions"] = list(example.gold_functions)
    if example.gold_functions_locagent is not None:
        row["gold_functions_locagent"] = list(example.gold_functions_locagent)
    for key, value in example.meta.items():
        row.setdefault(key, value)
    return row


def example_lines(examples: Iterable[Example]) -> Iterator[str]:
    """Each example as one JSONL line (with its newline), as :func:`write_examples` writes it."""
    for example in examples:
        yield json.dumps(example_to_row(example), ensure_ascii=False) + "\n"


def write_examples(path: str | Path, examples: Iterable[Example]) -> None:
    """Write examples as JSONL, atomically
    (:func:`~retrieval_bench.store.io.write_text_atomically`: a temp file in the same
    folder renamed over ``path``, with the mode of the file it replaces or a new
    file's): a failure midway leaves the old file whole.
    Whether ``path`` may be written is the caller's decision: ``rbench dataset``
    writes through :class:`~retrieval_bench.out_file.OutFile` instead, which
    refuses an existing file without ``--force``, an input and a missing folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, example_lines(examples))


def dataset_fingerprint(examples: Iterable[Example]) -> str:
    """sha256 of the canonical JSON of the examples, sorted by id (row order does not count)."""
    rows = sorted((example_to_row(e) for e in examples), key=lambda r: str(r["id"]))
    canonical = json.dumps(
        rows, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def question_fingerprint(example: Example) -> str:
    """sha256 of one example's canonical JSON (its query, gold, split and extra keys):
    two runs whose shared query ids have equal fingerprints asked the same questions,
    whatever else their question sets hold (``rbench compare``, docs/metrics.md)."""
    canonical = json.dumps(
        example_to_row(example), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
        default=str,
    )  # fmt: skip
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_gold(examples: Iterable[Example], existing_paths: set[str]) -> dict[str, list[str]]:
    """Gold files (and span files) absent from the snapshot, per query id; only ids with some."""
    missing: dict[str, list[str]] = {}
    for example in examples:
        wanted = dict.fromkeys([*example.gold_files, *(s.path for s in example.gold_spans)])
        absent = [p for p in wanted if p not in existing_paths]
        if absent:
            missing[example.id] = absent
    return missing


IGNORED_GOLD = "left out by an ignore rule or include:"
"""The reason of a missing gold file the snapshot has but the walk left out (a
``.gitignore``/``.rbenchignore`` line, the dataset's ``ignore:``, or not matched by
its ``include:``)."""


UNDER_LINK = "under a symbolic link to a folder, which the walker does not follow"
"""The reason of a missing gold file whose path passes through a symlinked folder."""


def _linked_folder(root: Path, rel: str) -> str | None:
    """The first folder of ``rel`` (below ``root``) that is a symbolic link, or None."""
    parts = Path(rel).parts[:-1]
    for i in range(1, len(parts) + 1):
        if (root.joinpath(*parts[:i])).is_symlink():
            return "/".join(parts[:i])
    return None


def missing_gold_reasons(
    missing: dict[str, list[str]], skipped: dict[str, str], root: Path | None = None
) -> dict[str, str]:
    """Why each missing gold file is missing: the walker's skip reason (too large,
    binary, unreadable, ...) when it saw the file; :data:`UNDER_LINK` when its path
    passes through a symlinked folder; :data:`IGNORED_GOLD` when the snapshot
    ``root`` has the file but an ignore rule or ``include:`` left it out; else
    ``not in the snapshot``."""

    def why(path: str) -> str:
        if path in skipped:
            return skipped[path]
        rel = os.path.normpath(path)
        inside = not os.path.isabs(rel) and rel != ".." and not rel.startswith(".." + os.sep)
        if root is None or not inside:
            return "not in the snapshot"
        linked = _linked_folder(root, rel)
        if linked is not None:
            return f"{UNDER_LINK} ({linked})"
        if (root / rel).is_file():
            return IGNORED_GOLD
        return "not in the snapshot"

    return {path: why(path) for paths in missing.values() for path in paths}


def merge_gold_functions(examples: list[Example], path: Path) -> list[Example]:
    """``examples`` with the ``gold_functions`` (and ``gold_functions_locagent``) of the
    rows of ``path`` (``{id, gold_functions, gold_functions_locagent?}`` JSONL) for
    those that carry none themselves."""
    found: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {}
    for number, row in jsonl_rows(read_text_file(path, "gold functions file")):
        if isinstance(row, json.JSONDecodeError) or not isinstance(row, dict):
            raise DatasetError(f"gold functions file {path}: line {number} is not a JSON object")
        qid = str(row.get("id"))
        try:
            found[qid] = parse_entities(row.get("gold_functions"), qid), derived_entities(row, qid)
        except RowProblem as exc:
            raise DatasetError(f"gold functions file {path}: line {number}: {exc}") from None
    out = []
    for e in examples:
        own, locagent = found.get(e.id, ((), None))
        if not e.gold_functions and own:
            e = replace(e, gold_functions=own)
        if e.gold_functions_locagent is None and locagent is not None:
            e = replace(e, gold_functions_locagent=locagent)
        out.append(e)
    return out

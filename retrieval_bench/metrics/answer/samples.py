"""Sample normalisation: many row shapes → one
:class:`~retrieval_bench.contracts.answer_metric.Sample`.

The evaluator first *unifies the sample format and converts between shapes*
before any metric sees a sample (docs/metrics.md#metric-interface-and-evaluator). Prediction files
come from many tools, each with its own field names, so a row is accepted as

* a :class:`Sample` (passed through; an empty id becomes the row index);
* a ``(prediction, reference)`` pair (tuple, or a two-item JSON array);
* a mapping whose fields go by any of the aliases in :data:`ALIASES`::

      {"id": "q1", "answer": "Paris", "ground_truth": ["Paris", "paris, France"],
       "question": "Capital of France?", "contexts": ["..."], "model": "x"}

  Every other key lands in ``Sample.meta``.

Two different alias keys holding different values (``answer`` and ``output``
disagreeing) is ambiguous and rejected; so is a row without a prediction.
Numbers are accepted where text is expected (``42`` → ``"42"``), nothing else
is. :func:`load_samples` reads a JSONL file: each bad row is reported with its
line number and the other rows still load
(docs/architecture.md#bad-input-and-failures, the same contract as
:mod:`retrieval_bench.datasets.jsonl`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.datasets.jsonl import RowError, jsonl_rows, read_text_file

ALIASES: dict[str, tuple[str, ...]] = {
    "prediction": ("prediction", "answer", "output", "response", "generated", "completion"),
    "references": (
        "reference",
        "references",
        "expected",
        "expected_output",
        "ground_truth",
        "reference_answer",
        "gold",
        "target",
        "answers",
    ),
    "question": ("question", "query", "input", "prompt"),
    "contexts": ("contexts", "context", "retrieved_contexts"),
    "id": ("id", "query_id", "sample_id", "qid"),
}
"""Sample field → the row keys accepted for it."""

_ALIAS_KEYS = frozenset(k for keys in ALIASES.values() for k in keys)


class SampleError(ValueError):
    """A row that cannot become a :class:`Sample`; the message says why, in one line."""


def to_sample(row: Any, index: int) -> Sample:
    """Normalise one row (see the module docstring) into a :class:`Sample`.

    ``index`` is the row's 0-based position: the default id, and how the
    error message names the row. Raises :class:`SampleError` (a ``ValueError``).
    """
    try:
        return _convert(row, index)
    except SampleError as exc:
        raise SampleError(f"row {index}: {exc}") from None


def _convert(row: Any, index: int) -> Sample:
    """:func:`to_sample` without the row label in the message."""
    if isinstance(row, Sample):
        return row if row.id else dataclasses.replace(row, id=str(index))
    if isinstance(row, Mapping):
        return _from_mapping(row, index)
    if isinstance(row, tuple | list):
        if len(row) != 2:
            raise SampleError(
                f"a {type(row).__name__} row must be (prediction, reference), got {len(row)} items"
            )
        prediction = _text(row[0], "prediction")
        return Sample(prediction, _texts(row[1], "reference"), id=str(index))
    raise SampleError(
        f"expected a JSON object or a (prediction, reference) pair, got {type(row).__name__}"
    )


def _from_mapping(row: Mapping[Any, Any], index: int) -> Sample:
    keys_seen = ", ".join(str(k) for k in row) or "none"
    fields = {name: _pick(row, name, aliases) for name, aliases in ALIASES.items()}
    if fields["prediction"] is None:
        raise SampleError(
            f"no prediction: expected one of {', '.join(ALIASES['prediction'])} "
            f"(non-null); keys seen: {keys_seen}"
        )
    return Sample(
        prediction=fields["prediction"],
        references=fields["references"] or (),
        question=fields["question"],
        contexts=fields["contexts"] or (),
        id=fields["id"] if fields["id"] is not None else str(index),
        meta={str(k): v for k, v in row.items() if k not in _ALIAS_KEYS},
    )


_CONVERTERS = {
    "prediction": lambda v, key: _text(v, key),
    "references": lambda v, key: _texts(v, key),
    "question": lambda v, key: _text(v, key),
    "contexts": lambda v, key: _texts(v, key, numbers=False),
    "id": lambda v, key: _identifier(v, key),
}


def _pick(row: Mapping[Any, Any], name: str, aliases: Sequence[str]) -> Any:
    """The converted value of the one alias present (null counts as absent);
    two aliases with different converted values are ambiguous."""
    found: list[tuple[str, Any]] = []
    for key in aliases:
        if key in row and row[key] is not None:
            found.append((key, _CONVERTERS[name](row[key], key)))
    if not found:
        return None
    first_key, value = found[0]
    for key, other in found[1:]:
        if other != value:
            raise SampleError(
                f"ambiguous {name}: {first_key!r} and {key!r} differ; keep one of them "
                f"(keys seen: {', '.join(str(k) for k in row)})"
            )
    return value


def _text(value: Any, key: str) -> str:
    """A string, or a finite int/float written as one; anything else is an error."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SampleError(f"{key!r} must be a string (or a number), got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SampleError(f"{key!r} must be a finite number, got {value}")
    return str(value)


def _texts(value: Any, key: str, *, numbers: bool = True) -> tuple[str, ...]:
    """One text or a list of them (None or an empty list means none)."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        items = [(f"{key}[{i}]", item) for i, item in enumerate(value)]
    elif isinstance(value, str) or (numbers and isinstance(value, int | float)):
        items = [(key, value)]
    else:
        raise SampleError(
            f"{key!r} must be a string or a list of strings, got {type(value).__name__}"
        )
    out = []
    for label, item in items:
        if not numbers and not isinstance(item, str):
            raise SampleError(f"{label} must be a string, got {type(item).__name__}")
        out.append(_text(item, label))
    return tuple(out)


def _identifier(value: Any, key: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise SampleError(f"{key!r} must be a non-empty string or an integer, got {value!r}")
    return value


def to_samples(rows: Iterable[Any]) -> list[Sample]:
    """Normalise every row; the first bad row raises :class:`SampleError`, as does a
    repeated id (scores are keyed by sample id)."""
    samples = [to_sample(row, i) for i, row in enumerate(rows)]
    check_unique_ids([s.id for s in samples])
    return samples


def check_unique_ids(ids: Sequence[str]) -> None:
    """Raise :class:`SampleError` naming the first repeated sample id."""
    first: dict[str, int] = {}
    for i, sid in enumerate(ids):
        if sid in first:
            raise SampleError(
                f"row {i}: duplicate sample id {sid!r} (first at row {first[sid]}); "
                "ids must be unique"
            )
        first[sid] = i


def load_samples(path: str | Path) -> tuple[list[Sample], list[RowError]]:
    """Read a predictions JSONL file into samples.

    Rows that are not valid JSON, that :func:`to_sample` rejects, or that repeat
    an earlier id become :class:`~retrieval_bench.datasets.jsonl.RowError`\\ s
    (1-based line numbers); the rest load. A row without an id gets its 0-based
    position among the file's non-blank lines. An unreadable file raises
    :class:`~retrieval_bench.errors.DatasetError`.
    """
    path = Path(path)
    text = read_text_file(path, "predictions file")
    samples: list[Sample] = []
    errors: list[RowError] = []
    first: dict[str, int] = {}
    for index, (line_no, row) in enumerate(jsonl_rows(text)):
        if isinstance(row, json.JSONDecodeError):
            errors.append(RowError(line_no, f"invalid JSON: {row.msg} (column {row.colno})"))
            continue
        try:
            sample = _convert(row, index)
        except SampleError as exc:
            errors.append(RowError(line_no, str(exc)))
            continue
        if sample.id in first:
            msg = f"duplicate id {sample.id!r} (first on line {first[sample.id]})"
            errors.append(RowError(line_no, msg))
            continue
        first[sample.id] = line_no
        samples.append(sample)
    return samples, errors

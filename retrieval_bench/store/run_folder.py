"""Reading a stored run's folder, ``results/<run-id>/``
(docs/architecture.md#the-run-folder; :mod:`retrieval_bench.harness.run.outputs`
writes it): its ``config.json``, its ``queries.jsonl`` and where its TREC runs lie.

One error rule for every reader (``rbench fit-ltr``, ``rbench compare``'s
same-question check, the web pages): a file that cannot be read is a
:class:`ResultsFileError` naming it — and the line, when one line is at fault
(not UTF-8, not JSON, not a record with the fields asked for). The caller decides
what that means: fit-ltr stops with it, the web renders it as a page, compare
treats the run as one whose questions cannot be told.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from retrieval_bench.errors import RBenchError
from retrieval_bench.identifiers import inside

__all__ = [
    "CONFIG_FILE",
    "QUERIES_FILE",
    "ResultsFileError",
    "read_queries",
    "read_run_config",
    "stage_trec_path",
]

CONFIG_FILE = "config.json"
QUERIES_FILE = "queries.jsonl"


class ResultsFileError(RBenchError):
    """A file of a run's results folder cannot be read; the message names file and line."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def read_queries(folder: Path, fields: Iterable[str] = ("query_id",)) -> list[dict[str, Any]]:
    """The records of ``folder/queries.jsonl`` in file order, blank lines skipped;
    :class:`ResultsFileError` when the file cannot be read (absent included: check
    first where absence is fine) or a line is not UTF-8, not JSON, or not a JSON
    object holding every one of ``fields``."""
    path = folder / QUERIES_FILE
    out: list[dict[str, Any]] = []
    try:
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                rec = _record(path, lineno, raw, fields)
                if rec is not None:
                    out.append(rec)
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot be read ({exc.strerror or exc})", path) from exc
    return out


def _record(path: Path, lineno: int, raw: bytes, fields: Iterable[str]) -> dict[str, Any] | None:
    """One line's record (None for a blank line), or the error naming ``path:lineno``."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{path}:{lineno}: not UTF-8 text", path) from exc
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}:{lineno}: not valid JSON ({exc.msg})", path) from exc
    if not isinstance(rec, dict):
        raise ResultsFileError(f"{path}:{lineno}: not a query record", path)
    missing = next((f for f in fields if f not in rec), None)
    if missing is not None:
        raise ResultsFileError(f"{path}:{lineno}: not a query record (no {missing!r})", path)
    return rec


def read_run_config(folder: Path) -> dict[str, Any]:
    """``folder/config.json`` (``{"config": ..., "provenance": ...}``);
    :class:`ResultsFileError` when it cannot be read or is not a JSON object."""
    path = folder / CONFIG_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot be read ({exc.strerror or exc})", path) from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ResultsFileError(f"{path}: not valid JSON ({exc})", path) from exc
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path}: not a run config (a JSON object)", path)
    return data


def stage_trec_path(folder: Path, dataset: str, stage: str) -> Path:
    """``folder/runs/<dataset>/<stage>.trec`` (it may not exist); ValueError when a
    name would lead outside the folder (:func:`~retrieval_bench.identifiers.inside`)."""
    return inside(folder / "runs", dataset, stage, suffix=".trec")

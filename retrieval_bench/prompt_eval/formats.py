"""Reading JSON, JSON Lines and CSV into line-numbered items: malformed rows are
reported with their line number (docs/architecture.md#bad-input-and-failures).

Each reader returns ``(line, object)`` pairs, ``line`` being where the item
starts in the file — for a JSON array the element's first line (found by
re-scanning the already-validated text with ``JSONDecoder.raw_decode``), for
CSV the first physical line of a record that may span several (quoted line
breaks). Syntax errors raise :class:`ImportFormatError` naming ``file:line``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from retrieval_bench.prompt_eval.errors import ImportFormatError

FORMATS = ("json", "jsonl", "csv")
KINDS = ("rows", "prompts")
PROMPT_COLUMNS = ("name", "model", "system", "user", "parameters", "baseline")
Item = tuple[int, dict[str, Any]]
"""(1-based line where the item starts, its fields)."""


def detect_format(path: Path, fmt: str | None = None) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt == "ndjson":
        fmt = "jsonl"
    if fmt not in FORMATS:
        raise ImportFormatError(
            f"{path}: unknown format {fmt or '(no extension)'!r}; use one of {', '.join(FORMATS)}"
            " (or pass --format)"
        )
    return fmt


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFormatError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            f"{path}: not UTF-8 text ({exc.reason}); re-save it as UTF-8"
        ) from exc
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read: {exc.strerror}") from exc


# --------------------------------------------------------------- parsing
def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _element_lines(text: str, key: str) -> list[int]:
    """Start line of each element of the top-level array or of the array under ``key``
    (``text`` is already known to be valid JSON)."""
    dec = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if text[i] == "{":
        i = _skip_ws(text, i + 1)
        while text[i] != "}":
            name, i = dec.raw_decode(text, i)
            i = _skip_ws(text, _skip_ws(text, i) + 1)  # past ':'
            if name == key and text[i] == "[":
                break
            i = _skip_ws(text, dec.raw_decode(text, i)[1])
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
        else:
            return []
    lines = []
    i = _skip_ws(text, i + 1)
    while text[i] != "]":
        lines.append(text.count("\n", 0, i) + 1)
        i = _skip_ws(text, dec.raw_decode(text, i)[1])
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return lines


def _json_items(text: str, src: str, key: str) -> tuple[list[Item], dict[str, Any]]:
    """Items of a JSON document, and the document's other top-level keys."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{src}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    meta: dict[str, Any] = {}
    if isinstance(doc, dict):
        if not isinstance(doc.get(key), list):
            raise ImportFormatError(f"{src}:1: expected an array or an object with a {key!r} array")
        meta = {k: v for k, v in doc.items() if k != key}
        doc = doc[key]
    elif not isinstance(doc, list):
        raise ImportFormatError(f"{src}:1: expected an array or an object with a {key!r} array")
    items = []
    for line, value in zip(_element_lines(text, key), doc, strict=True):
        if not isinstance(value, dict):
            raise ImportFormatError(f"{src}:{line}: expected an object, got {type(value).__name__}")
        items.append((line, value))
    return items, meta


def _jsonl_items(text: str, src: str) -> list[Item]:
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"{src}:{n}: not valid JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise ImportFormatError(f"{src}:{n}: expected an object, got {type(value).__name__}")
        items.append((n, value))
    return items


def _csv_items(text: str, src: str) -> list[Item]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise ImportFormatError(f"{src}:1: the CSV has no header row")
        header = [h.strip() for h in header]
        dupes = sorted({h for h in header if header.count(h) > 1})
        if dupes:
            raise ImportFormatError(f"{src}:1: duplicate column(s) {', '.join(dupes)}")
        items = []
        start = reader.line_num + 1
        for cells in reader:
            if any(c.strip() for c in cells):
                if len(cells) != len(header):
                    raise ImportFormatError(
                        f"{src}:{start}: {len(cells)} cells but the header has {len(header)} "
                        "columns; quote cells that contain commas or line breaks"
                    )
                items.append((start, dict(zip(header, cells, strict=True))))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ImportFormatError(f"{src}:{reader.line_num}: malformed CSV: {exc}") from exc
    return items


def read_items(path: Path, kind: str, fmt: str | None) -> tuple[list[Item], dict[str, Any], str]:
    fmt = detect_format(path, fmt)
    text = read_text(path)
    src = str(path)
    if fmt == "json":
        items, meta = _json_items(text, src, kind)
    else:
        items, meta = (_jsonl_items(text, src) if fmt == "jsonl" else _csv_items(text, src)), {}
    if not items:
        raise ImportFormatError(f"{src}: no {kind} in the file")
    return items, meta, fmt

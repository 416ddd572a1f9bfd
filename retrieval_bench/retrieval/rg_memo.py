"""ripgrep's matches remembered per (tree, command): within a process and on disk
(docs/sweeps.md#shared-work, docs/architecture.md#caches).

A sweep asks the same questions of one snapshot under several chunkings; the
matches ripgrep finds do not depend on the chunker (only their mapping to
chunks does), so ``exact`` runs each search once per tree. The key holds the
tree's signature — every corpus path with its size and modification time —
so a working tree edited in between is searched afresh. A warm re-run (same
workspace, its snapshot trees kept) reads the matches from the workspace's
``rg.sqlite`` instead of running ripgrep and decoding its JSON again: one row
per search, the matches already decoded. Bounded (entries and matches); off with
``RBENCH_CHUNK_CACHE=0``, like the other reuse.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

MAX_ENTRIES = 4096
MAX_LINES = 20000
"""Searches with more matches than this (a very common term) are not kept in the
process memo."""
MAX_STORED_LINES = 400_000
"""Searches with more matches than this are not written to the workspace's cache: the
largest searches cost the most to repeat (ripgrep's JSON decoded line by line)."""
CACHE_FILE = "rg.sqlite"
_FORMAT = b"rg-2"  # bump when a match's encoding changes (2: by column)

Match = tuple[str, int, str, tuple[str, ...]]
"""One matching line: its path (``/``-separated, relative to the tree), line number,
text, and the texts ripgrep matched on it."""


def _field_text(obj: Mapping[str, Any] | None) -> str:
    """Decode rg's ``{"text": …}`` or ``{"bytes": base64}`` (non-UTF-8 data) field."""
    if not obj:
        return ""
    if "text" in obj:
        return str(obj["text"])
    return os.fsdecode(base64.b64decode(obj.get("bytes", "")))


def parse_matches(lines: Iterable[str]) -> list[Match]:
    """The matches of ``rg --json`` output lines (begin, end and summary lines, and
    lines that are not JSON, are skipped)."""
    out: list[Match] = []
    for raw in lines:
        if '"match"' not in raw:  # begin/end/summary lines have no "match" key or value
            continue
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if msg.get("type") != "match":
            continue
        data = msg["data"]
        path = _field_text(data.get("path")).replace(os.sep, "/").removeprefix("./")
        subs = tuple(_field_text(sub.get("match")) for sub in data.get("submatches", ()))
        out.append((path, int(data["line_number"]), _field_text(data.get("lines")), subs))
    return out


def _encode(matches: list[Match]) -> str:
    """``matches`` by column (the path of each as an index into the distinct paths), so
    a read checks each column's types at once instead of every field of every row."""
    paths = list(dict.fromkeys(m[0] for m in matches))
    where = {p: i for i, p in enumerate(paths)}
    columns = {
        "paths": paths,
        "p": [where[m[0]] for m in matches],
        "n": [m[1] for m in matches],
        "t": [m[2] for m in matches],
        "s": [list(m[3]) for m in matches],
    }
    return json.dumps(columns, ensure_ascii=False, separators=(",", ":"))


def _only(values: Iterable[Any], kind: type) -> bool:
    """Whether every one of ``values`` is exactly of type ``kind`` (a JSON ``true`` is
    no line number)."""
    return set(map(type, values)) <= {kind}


def _decode(blob: str) -> list[Match]:
    try:
        cols = json.loads(blob)
        paths, at, lines, texts, subs = (cols[k] for k in ("paths", "p", "n", "t", "s"))
    except (ValueError, TypeError, KeyError) as exc:
        raise DamagedRowError(f"not matches by column: {exc}") from None
    columns = (paths, at, lines, texts, subs)
    if not all(type(c) is list for c in columns) or len({len(c) for c in columns[1:]}) > 1:
        raise DamagedRowError("the columns are not lists of one length")
    if not (_only(paths, str) and _only(at, int) and _only(lines, int) and _only(texts, str)
            and _only(subs, list) and _only(chain.from_iterable(subs), str)):  # fmt: skip
        raise DamagedRowError("a column holds a value of another type")
    if at and not (min(at) >= 0 and max(at) < len(paths)):
        raise DamagedRowError("a match names a path that is not there")
    return list(zip(map(paths.__getitem__, at), lines, texts, map(tuple, subs), strict=True))


class SearchStore(SQLiteCache):
    """ripgrep's matches keyed by a hash of (tree signature, command, timeout)."""

    what = "ripgrep cache"
    schema = "CREATE TABLE IF NOT EXISTS searches (key BLOB PRIMARY KEY, rows TEXT NOT NULL)"

    @staticmethod
    def key(search: tuple[Any, ...]) -> bytes:
        return hashlib.blake2b(_FORMAT + repr(search).encode(), digest_size=16).digest()

    def get(self, search: tuple[Any, ...]) -> list[Match] | None:
        select = "SELECT rows FROM searches WHERE key = ?"
        delete = "DELETE FROM searches WHERE key = ?"
        return self.read_row(select, delete, (self.key(search),), _decode)[1]

    def put(self, search: tuple[Any, ...], matches: list[Match]) -> None:
        if len(matches) > MAX_STORED_LINES:
            return
        blob = _encode(matches)
        self.insert_many(
            "INSERT OR REPLACE INTO searches (key, rows) VALUES (?, ?)", [(self.key(search), blob)]
        )


def search_store(folder: Path | None) -> SearchStore | None:
    """The process's one ripgrep cache in ``folder`` (None: no folder, or caches off)."""
    if folder is None or not chunk_cache_enabled():
        return None
    return SearchStore.shared(Path(folder) / CACHE_FILE)


def tree_signature(root: str | os.PathLike[str], paths: Sequence[str]) -> str:
    """The identity of the files under ``root`` that ripgrep will read."""
    top = Path(root).resolve()
    digest = hashlib.sha256(os.fsencode(top))
    for rel in sorted(paths):
        try:
            st = os.stat(os.path.join(top, rel))
        except OSError:
            continue
        digest.update(b"\0" + os.fsencode(rel) + f"\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return digest.hexdigest()


class SearchMemo:
    """A bounded, insertion-ordered map from a search key to ripgrep's matches."""

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], list[Match]] = {}

    def get(self, key: tuple[Any, ...]) -> list[Match] | None:
        return self._kept.get(key) if chunk_cache_enabled() else None

    def put(self, key: tuple[Any, ...], lines: list[Match]) -> None:
        if not chunk_cache_enabled() or len(lines) > MAX_LINES:
            return
        if len(self._kept) >= MAX_ENTRIES:
            self._kept.pop(next(iter(self._kept)))
        self._kept[key] = lines

    def clear(self) -> None:
        self._kept.clear()


RG_MEMO = SearchMemo()

"""ripgrep's output remembered per (tree, command) within a process
(docs/sweeps.md#shared-work).

A sweep asks the same questions of one snapshot under several chunkings; the
matches ripgrep finds do not depend on the chunker (only their mapping to
chunks does), so ``exact`` runs each search once per tree. The key holds the
tree's signature — every corpus path with its size and modification time —
so a working tree edited in between is searched afresh. Bounded (entries and
output lines); off with ``RBENCH_CHUNK_CACHE=0``, like the other reuse.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.chunking.cache import chunk_cache_enabled

MAX_ENTRIES = 4096
MAX_LINES = 20000
"""Outputs longer than this (a very common term) are not kept."""


def tree_signature(root: str | os.PathLike[str], paths: Sequence[str]) -> str:
    """The identity of the files under ``root`` that ripgrep will read."""
    digest = hashlib.sha256(os.fsencode(Path(root).resolve()))
    for rel in sorted(paths):
        try:
            st = os.stat(Path(root) / rel)
        except OSError:
            continue
        digest.update(b"\0" + os.fsencode(rel) + f"\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return digest.hexdigest()


class SearchMemo:
    """A bounded, insertion-ordered map from a search key to ripgrep's output lines."""

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], list[str]] = {}

    def get(self, key: tuple[Any, ...]) -> list[str] | None:
        return self._kept.get(key) if chunk_cache_enabled() else None

    def put(self, key: tuple[Any, ...], lines: list[str]) -> None:
        if not chunk_cache_enabled() or len(lines) > MAX_LINES:
            return
        if len(self._kept) >= MAX_ENTRIES:
            self._kept.pop(next(iter(self._kept)))
        self._kept[key] = lines

    def clear(self) -> None:
        self._kept.clear()


RG_MEMO = SearchMemo()

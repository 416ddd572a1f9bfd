"""Term counts per file on disk, content-addressed (docs/architecture.md#caches).

The lexical stages index the same files snapshot after snapshot, run after run:
tokenising them again is most of what a warm run costs. This cache keeps, per
*block* — the texts one file contributes to an index (its chunks' texts, or its
whole text) — each text's distinct terms in first-occurrence order and their
counts, as term ids into one vocabulary that only grows (ids are never reused or
renumbered). A block is keyed by a hash of the analyser (the tokenizer's
settings) and of the texts themselves, so it is found again for any snapshot,
run, pool worker or sweep cell whose file has the same chunks, whatever the path
or commit, and never for different texts.

Distinct terms and counts are all BM25 needs (term frequencies and lengths), and
enough to rebuild the order in which a corpus's terms first occur: the first
occurrence of a term in the documents one after the other lies in the first
document that has it, in that document's order of first occurrences
(:meth:`~retrieval_bench.retrieval.token_memo.TokenMemo.documents`).

One SQLite file holds both tables, so the vocabulary and the blocks that refer to
it are moved aside together when the file is damaged; a block that refers to a
term id the vocabulary does not have (or is not such a block) is a damaged row:
dropped with one warning and its file tokenised again. Several processes share
the file: a new term gets its id from SQLite (``INSERT OR IGNORE``, then read
back), so two workers meeting the same new term agree on it.
``RBENCH_CHUNK_CACHE=0`` turns it off with the other caches.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

CACHE_FILE = "terms.sqlite"
_FORMAT = b"terms-1"  # bump when a block's layout changes

IntArray = np.ndarray


class Block(NamedTuple):
    """The term counts of one file's texts: text ``i`` has ``sizes[i]`` distinct terms,
    which are the next ``sizes[i]`` entries of ``ids`` (first-occurrence order in
    that text) and of ``counts``."""

    sizes: IntArray
    ids: IntArray
    counts: IntArray


def block_key(analyser: str, texts: Sequence[str]) -> bytes:
    """The key of a block: blake2b-128 of the format, the analyser and the texts
    (with each one's length, so no two lists of texts share a key)."""
    h = hashlib.blake2b(_FORMAT + b"\0" + analyser.encode(), digest_size=16)
    h.update(repr([len(t) for t in texts]).encode() + b"\0")
    h.update("".join(texts).encode("utf-8", "surrogatepass"))
    return h.digest()


def encode_block(block: Block) -> bytes:
    """``[n texts, sizes…, ids…, counts…]`` as little-endian int32."""
    head = np.array([len(block.sizes)], dtype="<i4")
    parts = (head, block.sizes.astype("<i4"), block.ids.astype("<i4"), block.counts.astype("<i4"))
    return np.concatenate(parts).tobytes()


def decode_block(data: bytes, n_terms: int) -> Block:
    """The block :func:`encode_block` wrote; :class:`DamagedRowError` when ``data`` is
    not such a block or names a term id at or above ``n_terms``."""
    if len(data) % 4:
        raise DamagedRowError("not a whole number of int32 values")
    arr = np.frombuffer(data, dtype="<i4")
    if len(arr) == 0 or arr[0] < 0 or len(arr) < 1 + arr[0]:
        raise DamagedRowError("no text count, or fewer sizes than texts")
    n = int(arr[0])
    sizes = arr[1 : 1 + n]
    total = int(sizes.sum(dtype=np.int64))
    if (sizes < 0).any() or len(arr) != 1 + n + 2 * total:
        raise DamagedRowError("the sizes do not match the ids and counts")
    ids, counts = arr[1 + n : 1 + n + total], arr[1 + n + total :]
    if total and (ids.min() < 1 or ids.max() >= n_terms or counts.min() < 1):
        raise DamagedRowError("a term id outside the vocabulary, or a count below 1")
    return Block(sizes, ids, counts)


class TermStore(SQLiteCache):
    """The vocabulary and the blocks of one cache file (module doc)."""

    what = "term-count cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS vocab (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);"
        "CREATE TABLE IF NOT EXISTS blocks"
        " (key BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;"
    )

    def __init__(self, path: str | Path) -> None:
        self.words: list[str] = [""]
        """Term of each id (id 0 is never given)."""
        self.ids: dict[str, int] = {}
        self.generation = 0
        """Counts the times the file was moved aside and the ids started over: what
        a process memoised under an earlier generation means nothing now."""
        super().__init__(path)
        self.refresh()

    @classmethod
    def in_dir(cls, folder: str | Path) -> TermStore:
        return cls(Path(folder) / CACHE_FILE)

    def refresh(self) -> None:
        """Read the terms other processes added since the last read (or a new file's
        none, when the damaged one was moved aside: then start over)."""

        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            sql = "SELECT id, term FROM vocab WHERE id >= ? ORDER BY id"
            return list(conn.execute(sql, (len(self.words),)))

        opened = self._opened
        rows = self._guarded(read)
        if self._opened != opened:  # moved aside and reopened: the old ids are gone
            self.words, self.ids = [""], {}
            self.generation += 1
            rows = self._guarded(read)
        words, ids = self.words, self.ids
        for i, term in rows:
            words.extend([""] * (i - len(words)))  # a gap is never referred to
            words.append(term)
            ids[term] = i

    def add_terms(self, terms: Iterable[str]) -> None:
        """Give every term of ``terms`` not yet known an id (shared with other processes)."""
        new = [(t,) for t in dict.fromkeys(terms) if t not in self.ids]
        if new:
            self.insert_many("INSERT OR IGNORE INTO vocab (term) VALUES (?)", new)
            self.refresh()

    def get_blocks(self, keys: Sequence[bytes]) -> dict[bytes, Block]:
        """The stored blocks among ``keys`` (a damaged one is dropped and left out)."""
        found: dict[bytes, bytes] = {}

        def lookup(conn: sqlite3.Connection) -> None:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                sql = f"SELECT key, data FROM blocks WHERE key IN ({','.join('?' * len(part))})"
                found.update((bytes(k), bytes(d)) for k, d in conn.execute(sql, part))

        if keys:
            self._guarded(lookup)
        if found:
            self.refresh()  # blocks another process wrote may name terms it added since
        blocks = {}
        for key, data in found.items():
            try:
                blocks[key] = decode_block(data, len(self.words))
            except DamagedRowError as exc:
                self.drop_damaged("DELETE FROM blocks WHERE key = ?", (key,), exc)
        return blocks

    def put_blocks(self, blocks: dict[bytes, Block]) -> None:
        """Store blocks whose term ids this store gave (existing keys are kept)."""
        rows = [(k, encode_block(v)) for k, v in blocks.items()]
        self.insert_many("INSERT OR IGNORE INTO blocks (key, data) VALUES (?, ?)", rows)

    def count(self) -> int:
        return self._guarded(lambda c: int(c.execute("SELECT COUNT(*) FROM blocks").fetchone()[0]))

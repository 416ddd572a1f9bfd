"""A function ranker's candidates of one file, read once per file content and path
(docs/stages.md#function-ranker).

:func:`read_candidates` turns a Python file into its candidate definitions (the
module doc of :mod:`~retrieval_bench.rank_fusion.function_features` says what a
candidate is and what its features read); :func:`stored_candidates` keeps them in
the workspace's definitions folder (``candidates.sqlite``), keyed by the file's
content and path, so a later process neither parses nor tokenises a file an
earlier one read. Like the other caches it is only a cache: a damaged row is
dropped with one warning and the file read again; ``RBENCH_CHUNK_CACHE=0``
turns it off.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from retrieval_bench.datasets.gold_functions import Definition, content_key, definitions_cached
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.definitions_cache import DefinitionsCache
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

TOKENIZER = CodeTokenizer()
_CALL = re.compile(r"(?<!def )(?<!class )\b([A-Za-z_]\w*)\s*\(")
CACHE_FILE = "candidates.sqlite"
_FORMAT = b"cands-1"  # bump when a candidate or how it is read changes


@dataclass(frozen=True, eq=False)
class Candidate:
    """One candidate definition of a file (module doc)."""

    entity: str
    """``path:Qualified.name``, as gold functions are named."""
    path: str
    name: str
    """The dotted name (``Class.method``)."""
    kind: str
    """``function``, ``method`` or ``class``."""
    start: int
    """The first line (1-based) of its first definition."""
    lines: int
    file_lines: int
    tf: Mapping[str, int] = field(repr=False)
    """Term frequencies of its BM25 document (module doc)."""
    length: int = 0
    calls: frozenset[str] = field(default=frozenset(), repr=False)
    """Names it calls (module doc), its own left out."""

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def owner(self) -> str:
        """The enclosing class's name ("" for a top-level definition)."""
        parts = self.name.split(".")
        return parts[-2] if len(parts) > 1 else ""

    @property
    def depth(self) -> int:
        return self.name.count(".")


def _opens(line: str, short: str) -> str | None:
    """``def`` or ``class`` when ``line`` opens the definition named ``short``: what
    ``^\\s*(?:async\\s+)?(def|class)\\s+SHORT\\b`` matches, without a regex per name."""
    rest = line.lstrip()
    if rest.startswith("async") and rest[5:6].isspace():
        rest = rest[5:].lstrip()
    for keyword in ("def", "class"):
        if rest.startswith(keyword) and rest[len(keyword) : len(keyword) + 1].isspace():
            name = rest[len(keyword) :].lstrip()
            after = name[len(short) : len(short) + 1]
            if name.startswith(short) and not (after.isalnum() or after == "_"):
                return keyword
    return None


def _signature(defs: Sequence[Definition], lines: Sequence[str], short: str) -> tuple[str, str]:
    """The ``def``/``class`` line of the first definition and the keyword it starts with."""
    first = defs[0]
    for line in lines[first.start - 1 : first.end]:
        keyword = _opens(line, short)
        if keyword is not None:
            return line, keyword
    return (lines[first.start - 1] if first.start <= len(lines) else ""), "def"


def read_candidates(path: str, text: str, store: DefinitionsCache | None = None) -> list[Candidate]:
    """The candidates of one Python file's ``text`` (module doc), in source order; its
    definitions read from ``store`` when an earlier process parsed the same text."""
    lines = text.split("\n")
    groups: dict[str, list[Definition]] = {}
    for d in definitions_cached(text, store=store):
        if (d.entity or d.name) == d.name:
            groups.setdefault(d.name, []).append(d)
    out = []
    for name, defs in groups.items():
        short = name.rsplit(".", 1)[-1]
        signature, keyword = _signature(defs, lines, short)
        kind = "class" if keyword == "class" else ("method" if "." in name else "function")
        body = "\n".join("\n".join(lines[d.start - 1 : d.end]) for d in defs)
        owner = name.split(".")[-2] if "." in name else ""
        tf = Counter(TOKENIZER.term_counts(f"{name}\n{signature}\n{body}\n{path}\n{owner}"))
        calls = frozenset(_CALL.findall(body)) - {short}
        out.append(Candidate(
            f"{path}:{name}", path, name, kind, defs[0].start,
            sum(d.end - d.start + 1 for d in defs), len(lines), tf, sum(tf.values()), calls,
        ))  # fmt: skip
    return out


def _encode(cands: Sequence[Candidate]) -> str:
    rows = [[c.name, c.kind, c.start, c.lines, c.file_lines, dict(c.tf), c.length, sorted(c.calls)]
            for c in cands]  # fmt: skip
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def _decode(path: str, blob: str) -> list[Candidate]:
    try:
        out = [
            Candidate(f"{path}:{n}", path, n, k, s, ln, fl, Counter(tf), length, frozenset(calls))
            for n, k, s, ln, fl, tf, length, calls in json.loads(blob)
        ]
    except (ValueError, TypeError) as exc:
        raise DamagedRowError(f"not a list of candidates: {exc}") from None
    for c in out:
        if not (isinstance(c.name, str) and isinstance(c.start, int) and isinstance(c.tf, dict)):
            raise DamagedRowError(f"a candidate is not what this version writes: {c.name!r}")
    return out


class CandidateCache(SQLiteCache):
    """Candidates keyed by a hash of the file's content key and path (module doc)."""

    what = "function-ranker candidates cache"
    schema = "CREATE TABLE IF NOT EXISTS cands (key BLOB PRIMARY KEY, rows TEXT NOT NULL)"

    insert = "INSERT OR IGNORE INTO cands (key, rows) VALUES (?, ?)"

    @staticmethod
    def key(path: str, text: str) -> bytes:
        h = hashlib.blake2b(_FORMAT + content_key(text) + path.encode(), digest_size=16)
        return h.digest()

    def get(self, path: str, text: str) -> list[Candidate] | None:
        select, delete = "SELECT rows FROM cands WHERE key = ?", "DELETE FROM cands WHERE key = ?"
        return self.read_row(select, delete, (self.key(path, text),), partial(_decode, path))[1]

    def put(self, path: str, text: str, cands: Sequence[Candidate]) -> None:
        self.queue((self.key(path, text), _encode(cands)))


def _store(folder: Path | None) -> CandidateCache | None:
    if DefinitionsCache.for_folder(folder) is None or folder is None:
        return None
    return CandidateCache.shared(Path(folder) / CACHE_FILE)


def stored_candidates(path: str, text: str, folder: Path | None) -> tuple[Candidate, ...]:
    """:func:`read_candidates` of ``path``'s ``text``, from the cache in ``folder`` when an
    earlier process read them (None: no cache)."""
    store = _store(folder)
    found = store.get(path, text) if store is not None else None
    if found is None:
        found = read_candidates(path, text, DefinitionsCache.for_folder(folder))
        if store is not None:
            store.put(path, text, found)
    return tuple(found)


def flush_candidates(folder: Path | None) -> None:
    """Write what :func:`stored_candidates` read since the last flush, for later processes."""
    if (store := _store(folder)) is not None:
        store.flush()
    if (defs := DefinitionsCache.for_folder(folder)) is not None:
        defs.flush()

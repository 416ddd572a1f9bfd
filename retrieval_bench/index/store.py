"""The codebase index on LanceDB: build, update, exists, query (docs/architecture.md#caches).

``CodebaseIndex`` has ``exists``, ``build``, ``update`` and ``query(query, n)``.
Progress goes to a ``(done, total, unit)`` callback with real counts (not a
bare 0–1 fraction) — files chunked, then
chunks embedded, one report per embedding batch — which the CLI shows as a
bar with counts and ETA (:mod:`retrieval_bench.progress`); every method is
synchronous.

Layout under ``uri`` (a local folder, ``lancedb.connect(uri)``): one table
``<name>__<build-id>`` per build (every Chunk field as a column, plus
``text_sha256``, ``file_sha256`` and the unit-norm ``vector``) and a manifest
``<name>.manifest.json`` naming the active table, the chunker name and config,
the embedder, the tokenizer, per-file sha256, skipped files and ``built_at``.

**Interrupted builds.** A build or update writes a *new* table and only at
the very end atomically replaces the manifest
(:func:`~retrieval_bench.store.io.write_text_atomically`);
older tables are dropped after the switch. Until then the previous manifest
still names the previous, complete table, so an exception, Ctrl-C or crash
mid-build leaves the old index answering queries.

**Update.** Unchanged files (same sha256) keep their rows and vectors;
changed and added files are re-chunked, and only texts found neither in the
old table nor in the embedding cache (with a ``CachedEmbedder``) reach the
model; removed files are not copied.

**Search** is exact (flat) cosine search: no ANN index is built, which is
fast enough here (~10 ms per query at 10k chunks). Above ~100k chunks an
IVF-PQ/HNSW index can be added in :meth:`CodebaseIndex._write` with
``table.create_index``; results would then be approximate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import IndexBuildError
from retrieval_bench.files import SourceFile, WalkReport, iter_source_files
from retrieval_bench.index.build_stats import BuildStats
from retrieval_bench.index.damage import open_table, read_table
from retrieval_bench.index.embed import Embedder, text_hash
from retrieval_bench.store.io import write_text_atomically
from retrieval_bench.types import Chunk

try:  # advisory file lock on POSIX; elsewhere concurrent builds are not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

Progress = Callable[[int, int, str], None]
"""``(done, total, unit)``: ``unit`` is ``"files"`` while chunking, then
``"chunks embedded"`` (distinct new texts) while embedding."""
MANIFEST_FORMAT = 1
EMBED_BATCH = 64
"""Texts per embedder call: one progress report each (the model's own batch size
is 64, so smaller calls cost no throughput; one call for everything left the
progress bar frozen for the whole embedding phase)."""
UNIT_FILES, UNIT_EMBEDDED = "files", "chunks embedded"
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_CHUNK_COLUMNS = tuple(f.name for f in dataclasses.fields(Chunk))


def _schema(dim: int) -> pa.Schema:
    """Every Chunk field as a column (only ``symbol`` nullable), then hashes and the vector."""
    types = {"start_line": pa.int32(), "end_line": pa.int32(), "n_tokens": pa.int32()}
    fields = [
        pa.field(c, types.get(c, pa.string()), nullable=c == "symbol")
        for c in (*_CHUNK_COLUMNS, "text_sha256", "file_sha256")
    ]
    return pa.schema([*fields, pa.field("vector", pa.list_(pa.float32(), dim), nullable=False)])


def _rows_to_chunks(table: pa.Table) -> list[Chunk]:
    cols = {c: table.column(c).to_pylist() for c in _CHUNK_COLUMNS}
    return [Chunk(**{c: cols[c][i] for c in cols}) for i in range(table.num_rows)]


def vectors_of(table: pa.Table) -> np.ndarray:
    """The ``vector`` column of an Arrow table as a ``(rows, dim)`` float32 matrix."""
    col = table.column("vector").combine_chunks()
    dim = col.type.list_size
    flat = col.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(-1, dim)


class CodebaseIndex:
    """One index per (repository snapshot, chunker config, embedder), stored in LanceDB."""

    def __init__(
        self,
        uri: str | Path,
        name: str,
        chunker: Chunker,
        embedder: Embedder,
        ignore: Sequence[str] = (),
        include: Sequence[str] = (),
    ):
        """``ignore``, ``include``: a dataset's lists of files to drop and to keep."""
        if not _NAME_RE.match(name):
            raise IndexBuildError(
                f"index name {name!r} is invalid; use letters, digits, '_', '-' or '.'"
            )
        self.uri = Path(uri)
        self.name = name
        self.chunker = chunker
        self.embedder = embedder
        self._walk = partial(iter_source_files, extra_ignore=tuple(ignore), include=tuple(include))
        self._db: Any = None

    # ----------------------------------------------------------------- state
    @property
    def db(self) -> Any:
        if self._db is None:
            self.uri.mkdir(parents=True, exist_ok=True)
            self._db = lancedb.connect(str(self.uri))
        return self._db

    @property
    def manifest_path(self) -> Path:
        return self.uri / f"{self.name}.manifest.json"

    def manifest(self) -> dict[str, Any] | None:
        """The active manifest, or None when there is none or it is unreadable."""
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None

    def _compatible(self, manifest: dict[str, Any]) -> bool:
        return (
            manifest.get("chunker") == {"name": self.chunker.name, "config": self._chunker_config()}
            and manifest.get("embedder", {}).get("name") == self.embedder.name
        )

    def _chunker_config(self) -> dict[str, Any]:
        # Round-trip through JSON so tuples and lists compare equal to the stored form.
        loaded: dict[str, Any] = json.loads(json.dumps(self.chunker.config(), default=str))
        return loaded

    def _open(self, table: str) -> Any | None:
        """The table; None when missing or damaged (moved aside then: index/damage.py)."""
        return open_table(self.db, self.uri, table)

    def exists(self) -> bool:
        """True when a complete index for this chunker config and embedder is on disk."""
        manifest = self.manifest()
        if manifest is None or not self._compatible(manifest):
            return False
        return self._open(str(manifest["table"])) is not None

    def _active(self) -> tuple[dict[str, Any], Any]:
        manifest = self.manifest()
        table = self._open(str(manifest["table"])) if manifest else None
        if manifest is None or table is None:
            raise IndexBuildError(
                f"no index {self.name!r} at {self.uri}; build it first (rbench index)"
            )
        return manifest, table

    # ----------------------------------------------------------------- build
    def build(self, root: Path, progress: Progress | None = None) -> BuildStats:
        """Chunk and embed every file under ``root`` into a fresh table, then switch to it."""
        with self._locked():
            return self._run(Path(root), progress, previous=None)

    def update(self, root: Path, progress: Progress | None = None) -> BuildStats:
        """Re-process only changed, added and removed files (a full build if none is usable)."""
        with self._locked():
            manifest = self.manifest()
            old = self._open(str(manifest["table"])) if manifest else None
            if manifest is None or old is None or not self._compatible(manifest):
                return self._run(Path(root), progress, previous=None)
            rows = read_table(self.uri, str(manifest["table"]), old)  # None: damaged
            return self._run(Path(root), progress, None if rows is None else (manifest, rows))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise builds of this index across processes (concurrent runs)."""
        self.uri.mkdir(parents=True, exist_ok=True)
        with open(self.uri / f"{self.name}.lock", "a") as fh:
            if fcntl is not None:
                fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def _run(
        self,
        root: Path,
        progress: Progress | None,
        previous: tuple[dict[str, Any], pa.Table] | None,
    ) -> BuildStats:
        if not root.is_dir():
            raise IndexBuildError(f"repository {root} is missing or not a folder; check the path")
        started = time.perf_counter()
        report_fn: Progress = progress or (lambda _d, _t, _u: None)
        stats = BuildStats(mode="build" if previous is None else "update")
        report = WalkReport()
        sources = list(self._walk(root, report=report))
        new_hashes = {s.path: s.sha256 for s in sources}
        old_hashes: dict[str, str] = dict(previous[0]["files"]) if previous else {}
        todo = [s for s in sources if old_hashes.get(s.path) != s.sha256]
        kept = sorted(p for p in new_hashes if old_hashes.get(p) == new_hashes[p])
        stats.files, stats.files_unchanged = len(sources), len(kept)
        stats.files_added = sum(1 for s in todo if s.path not in old_hashes)
        stats.files_changed = len(todo) - stats.files_added
        stats.files_removed = sum(1 for p in old_hashes if p not in new_hashes)
        report_fn(0, len(todo), UNIT_FILES)
        if previous is not None and not todo and not stats.files_removed:
            stats.chunks = stats.chunks_reused = previous[1].num_rows  # nothing to do
            stats.table, stats.skipped = previous[0]["table"], dict(previous[0]["skipped"])
        else:
            old = previous[1] if previous else None
            chunks, file_of = self._chunk(todo, report, report_fn)
            vectors = self._embed(chunks, self._reusable_vectors(old), stats, report_fn)
            table = self._arrow(chunks, file_of, vectors)
            if old is not None and kept:
                old_rows = old.filter(pc.is_in(old.column("path"), pa.array(kept, pa.string())))
                stats.chunks_reused += old_rows.num_rows
                table = pa.concat_tables([old_rows, table])
                kept_set = set(kept)
                for path, why in previous[0]["skipped"].items() if previous else ():
                    if path in kept_set:
                        report.skipped.setdefault(path, why)
            stats.chunks, stats.skipped = table.num_rows, dict(report.skipped)
            stats.table = self._write(table, new_hashes, stats.skipped)
        stats.seconds = time.perf_counter() - started
        return stats

    def _chunk(
        self, todo: Sequence[SourceFile], report: WalkReport, report_fn: Progress
    ) -> tuple[list[Chunk], dict[str, str]]:
        chunks: list[Chunk] = []
        file_of: dict[str, str] = {}
        for i, source in enumerate(todo):
            try:
                file_chunks = self.chunker.chunk_file(source)
            except Exception as exc:  # a chunker must not raise; never lose the build to one file
                report.skipped[source.path] = f"chunker failed: {exc}"
                file_chunks = []
            chunks.extend(file_chunks)
            file_of[source.path] = source.sha256
            report_fn(i + 1, len(todo), UNIT_FILES)
        return chunks, file_of

    @staticmethod
    def _reusable_vectors(old: pa.Table | None) -> dict[str, np.ndarray]:
        if old is None or old.num_rows == 0:
            return {}
        matrix = vectors_of(old)
        return dict(zip(old.column("text_sha256").to_pylist(), matrix, strict=True))

    def _embed(
        self,
        chunks: Sequence[Chunk],
        reuse: dict[str, np.ndarray],
        stats: BuildStats,
        report_fn: Progress,
    ) -> np.ndarray:
        """Vectors for ``chunks``, embedding each distinct new text once, in batches."""
        hashes = [text_hash(c.text) for c in chunks]
        unique: dict[str, str] = {}
        for h, c in zip(hashes, chunks, strict=True):
            if h not in reuse and h not in unique:
                unique[h] = c.text
        stats.chunks_reused += sum(1 for h in hashes if h in reuse)
        stats.texts_embedded = len(unique)
        hits_before = getattr(self.embedder, "hits", None)
        found = dict(reuse)
        report_fn(0, len(unique), UNIT_EMBEDDED)
        # Longest first across *all* batches, as encode() sorts within one call:
        # batches of similar length waste no padding (measured in benchmarks/perf).
        keys = sorted(unique, key=lambda h: -len(unique[h]))
        for start in range(0, len(keys), EMBED_BATCH):
            batch = keys[start : start + EMBED_BATCH]
            vecs = np.asarray(self.embedder.embed([unique[h] for h in batch]), dtype=np.float32)
            found.update(zip(batch, vecs, strict=True))
            report_fn(start + len(batch), len(keys), UNIT_EMBEDDED)
        hits_after = getattr(self.embedder, "hits", None)
        if isinstance(hits_before, int) and isinstance(hits_after, int):
            stats.texts_cached = hits_after - hits_before
        if not chunks:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)

    def _arrow(
        self, chunks: Sequence[Chunk], file_of: dict[str, str], vectors: np.ndarray
    ) -> pa.Table:
        dim = self.embedder.dim
        data: dict[str, Any] = {c: [getattr(ch, c) for ch in chunks] for c in _CHUNK_COLUMNS}
        data["text_sha256"] = [text_hash(ch.text) for ch in chunks]
        data["file_sha256"] = [file_of[ch.path] for ch in chunks]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        data["vector"] = pa.FixedSizeListArray.from_arrays(flat, dim)
        return pa.table(data, schema=_schema(dim))

    def _write(self, table: pa.Table, files: dict[str, str], skipped: dict[str, str]) -> str:
        """Write a new table, atomically switch the manifest to it, drop the old tables."""
        build_id = f"{time.strftime('%Y%m%dT%H%M%S')}_{uuid.uuid4().hex[:8]}"
        table_name = f"{self.name}__{build_id}"
        self.db.create_table(table_name, data=table.cast(_schema(self.embedder.dim)))
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": self.name,
            "table": table_name,
            "build_id": build_id,
            "chunker": {"name": self.chunker.name, "config": self._chunker_config()},
            "embedder": {"name": self.embedder.name, "dim": self.embedder.dim},
            "tokenizer": self.chunker.tokenizer_name,
            "n_chunks": table.num_rows,
            "files": dict(sorted(files.items())),
            "skipped": dict(sorted(skipped.items())),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "search": "exact (flat) cosine",
        }
        write_text_atomically(self.manifest_path, json.dumps(manifest, indent=1, sort_keys=True))
        self._drop_stale(keep=table_name)
        return table_name

    def _drop_stale(self, keep: str) -> None:
        """Drop this index's other tables: superseded builds and interrupted ones."""
        prefix = f"{self.name}__"
        for name in self.db.list_tables().tables:
            ours = name.startswith(prefix) and "__" not in name[len(prefix) :]
            if ours and name != keep:
                with contextlib.suppress(ValueError, OSError):
                    self.db.drop_table(name)

    # ----------------------------------------------------------------- read
    def query(self, text: str, n: int = 4) -> list[tuple[Chunk, float]]:
        """Top ``n`` chunks for a question, with cosine similarity (higher = better)."""
        vec = np.asarray(self.embedder.embed([text]), dtype=np.float32)
        return self.query_vectors(vec, n)[0]

    def query_vectors(self, vectors: np.ndarray, n: int = 4) -> list[list[tuple[Chunk, float]]]:
        """Exact top ``n`` per query vector (rows of ``vectors``), one list per row."""
        q = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        results: list[list[tuple[Chunk, float]]] = [[] for _ in range(len(q))]
        _, table = self._active()
        if len(q) == 0 or n <= 0 or table.count_rows() == 0:
            return results
        cols = list(_CHUNK_COLUMNS)
        hits = (
            table.search(list(q) if len(q) > 1 else q[0])
            .distance_type("cosine")
            .select(cols)
            .limit(n)
            .to_arrow()
        )
        qidx = hits.column("query_index").to_pylist() if len(q) > 1 else [0] * hits.num_rows
        scores = (1.0 - hits.column("_distance").to_numpy(zero_copy_only=False)).tolist()
        for i, chunk, score in zip(qidx, _rows_to_chunks(hits), scores, strict=True):
            results[i].append((chunk, float(score)))
        for r in results:
            r.sort(key=lambda cs: (-cs[1], cs[0].id))
        return results

    def chunks(self) -> list[Chunk]:
        """Every chunk of the active table, ordered by path and span."""
        _, table = self._active()
        data = table.to_arrow().select(list(_CHUNK_COLUMNS))
        return sorted(_rows_to_chunks(data), key=lambda c: (c.path, c.start_line, c.end_line, c.id))

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """Chunk ids and their unit-norm vectors (for in-memory dense search)."""
        _, table = self._active()
        data = table.to_arrow().select(["id", "vector"])
        return data.column("id").to_pylist(), vectors_of(data)

    def corpus(self, root: Path) -> Corpus:
        """The indexed chunks as a :class:`Corpus` over the working tree ``root``."""
        manifest, _ = self._active()
        return Corpus(
            root=Path(root),
            chunks=self.chunks(),
            tokenizer=str(manifest.get("tokenizer", "")),
            skipped=dict(manifest.get("skipped", {})),
        )

    def __repr__(self) -> str:
        return f"CodebaseIndex({str(self.uri)!r}, {self.name!r})"

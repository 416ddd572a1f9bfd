"""The content-addressed chunk cache: reused chunks equal fresh ones, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_bench.chunking.cache import (
    CACHE_ENV,
    ChunkCache,
    ChunkStats,
    chunk_cache_enabled,
    chunk_tree_cached,
)
from retrieval_bench.contracts.chunker import chunk_tree
from retrieval_bench.harness.run.prepare import build_corpus, make_chunker
from retrieval_bench.snapshot import Snapshot
from retrieval_bench.workspace import Workspace

PY = '''"""A module."""

import os


class Greeter:
    """Says hello."""

    def __init__(self, name):
        self.name = name

    def greet(self):
        return f"hello {self.name}"


def helper(x):
    return os.path.join("a", str(x))
'''

JS = "export function add(a, b) {\n  return a + b;\n}\n\nconst k = add(1, 2);\n"


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(PY)
    (root / "pkg" / "copy.py").write_text(PY)  # same bytes, other path
    (root / "pkg" / "copy.txt").write_text(PY)  # same bytes, other language
    (root / "web.js").write_text(JS)
    (root / "README.md").write_text("# Title\n\nSome words about the project.\n")
    big = "\n".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(80))
    (root / "big.py").write_text(big)
    return root


def _cached(root: Path, cache: ChunkCache, name: str = "ast", **params: object):
    stats = ChunkStats()
    chunks = list(chunk_tree_cached(root, make_chunker(name, **params), cache, None, stats))
    return chunks, stats


@pytest.mark.parametrize(("name", "params"), [("ast", {"budget": 64}), ("window", {})])
def test_cached_chunks_equal_fresh(tmp_path: Path, name: str, params: dict[str, object]) -> None:
    root = _repo(tmp_path / "repo")
    fresh = list(chunk_tree(root, make_chunker(name, **params)))
    cache = ChunkCache(tmp_path / "c" / "chunks.sqlite")
    cold, s1 = _cached(root, cache, name, **params)
    warm, s2 = _cached(root, cache, name, **params)
    assert cold == fresh and warm == fresh  # ids, paths, spans, text, n_tokens, kinds
    assert len({c.path for c in fresh}) == 6
    # copy.py shares mod.py's key (one cache row), read back with its own ids
    assert (s1.files_chunked, s1.files_reused) == (6, 0) and cache.count() == 5
    assert (s2.files_chunked, s2.files_reused) == (0, 6)
    assert any(c.id.startswith("pkg/copy.py:") for c in warm)


def test_one_changed_file_is_the_only_one_rechunked(tmp_path: Path) -> None:
    a = _repo(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / "web.js").write_text(JS + "\nexport const z = 3;\n")
    cache = ChunkCache(tmp_path / "c" / "chunks.sqlite")
    _cached(a, cache)
    chunks, stats = _cached(b, cache)
    assert chunks == list(chunk_tree(b, make_chunker("ast")))
    assert (stats.files_chunked, stats.files_reused) == (1, 5)


def test_other_chunker_params_do_not_share(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    cache = ChunkCache(tmp_path / "chunks.sqlite")
    _cached(root, cache, budget=64)
    chunks, stats = _cached(root, cache, budget=32)
    assert stats.files_reused == 0
    assert chunks == list(chunk_tree(root, make_chunker("ast", budget=32)))


def test_corrupt_cache_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    path = tmp_path / "chunks.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = ChunkCache(path)
    chunks, stats = _cached(root, cache)
    assert chunks == list(chunk_tree(root, make_chunker("ast")))
    assert stats.files_chunked == 6 and cache.count() == 5
    assert list(tmp_path.glob("chunks.sqlite.corrupt-*"))


@pytest.mark.parametrize(
    "damage",
    ['{"not": "a list"}', "[[1, 2, 3]]",
     '[[0, 2, "python", "function", null, "x", 1, "0123456789abcdef"]]',
     '[[1, 2, "python", "function", 7, "x", 1, "0123456789abcdef"]]',
     '[[1, 2, "python", "function", null, "x", 1]]',  # the format before text hashes
     '[[1, 2, "python", "function", null, "x", 1, "01234"]]', "not json"],
)  # fmt: skip
def test_a_damaged_row_is_dropped_with_one_warning_and_rechunked(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row that is valid SQLite but not what the cache writes (it once stopped a run
    with a traceback) is a miss: dropped with one warning, the file chunked again."""
    monkeypatch.setattr("retrieval_bench.chunking.cache._MEMO", {})
    root = _repo(tmp_path / "repo")
    path = tmp_path / "chunks.sqlite"
    cache = ChunkCache(path)
    first, _ = _cached(root, cache)
    cache._guarded(lambda c: (c.execute("UPDATE chunks SET rows = ?", (damage,)), c.commit()))
    cache.close()
    monkeypatch.setattr("retrieval_bench.chunking.cache._MEMO", {})
    again = ChunkCache(path)
    chunks, stats = _cached(root, again)
    assert chunks == first and stats.files_chunked == 6
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "had a damaged row" in warned[0], warned
    assert again.count() == 5  # the rows are written afresh


def test_build_corpus_uses_the_cache_unless_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path / "repo")
    snap = Snapshot(root, str(root), "folder", "x")
    chunker = make_chunker("ast")
    fresh = list(chunk_tree(root, chunker))
    monkeypatch.delenv("RBENCH_CACHE", raising=False)  # the workspace's own cache folder
    monkeypatch.setenv(CACHE_ENV, "0")
    assert not chunk_cache_enabled()
    ws = Workspace(tmp_path / "ws")
    off, _ = build_corpus(snap, chunker, ws, with_vectors=False)
    assert not (ws.cache_dir / "chunks").exists()
    monkeypatch.delenv(CACHE_ENV)
    stats = ChunkStats()
    on, _ = build_corpus(snap, chunker, ws, with_vectors=False, stats=stats)
    again, _ = build_corpus(snap, chunker, ws, with_vectors=False, stats=stats)
    assert off.chunks == on.chunks == again.chunks == fresh
    assert (ws.cache_dir / "chunks" / "chunks.sqlite").is_file()
    assert (stats.files_chunked, stats.files_reused) == (6, 6)


def test_unchanged_files_come_from_the_process_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file met again at the same path (the next snapshot of a run) costs no query; a
    cache in another file keeps its own memo."""
    root = _repo(tmp_path / "repo")
    cache = ChunkCache(tmp_path / "c" / "chunks.sqlite")
    cold, _ = _cached(root, cache)

    def no_query(op: object) -> object:
        raise AssertionError("the database was queried")

    monkeypatch.setattr(cache, "_guarded", no_query)
    warm, stats = _cached(root, cache)
    assert warm == cold == list(chunk_tree(root, make_chunker("ast")))
    assert (stats.files_chunked, stats.files_reused) == (0, 6)
    _, other = _cached(root, ChunkCache(tmp_path / "d" / "chunks.sqlite"))
    assert (other.files_chunked, other.files_reused) == (6, 0)


def test_chunks_whose_ids_lack_chunk_ids_form_are_not_cached(tmp_path: Path) -> None:
    """The cache stores each id's text hash and rebuilds ids from it; a chunker whose
    ids are not ``path:start-end:<16 hex digits>`` is chunked afresh every time."""
    from dataclasses import replace

    from retrieval_bench.chunking.cache import _derived
    from retrieval_bench.files import SourceFile

    chunker = make_chunker("ast")
    made = chunker.chunk_file(SourceFile("pkg/mod.py", PY, "0" * 64))
    assert made and _derived(made)
    for bad in ("c1", f"pkg/other.py:{made[0].start_line}-{made[0].end_line}:{'0' * 16}",
                made[0].id[:-1], made[0].id[:-16] + "G" * 16):  # fmt: skip
        assert not _derived([replace(made[0], id=bad), *made[1:]])

"""CodebaseIndex on real LanceDB; dense retrieval with the real MiniLM
(docs/architecture.md#caches, docs/stages.md#dense).

Build/update/interruption semantics use the counting fake embedder (fast, and
it records exactly which texts reached the "model"); the last tests load the
packaged MiniLM and the real ``window``/``ast`` chunkers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import IndexBuildError
from retrieval_bench.index.embed import CachedEmbedder, EmbeddingCache, SentenceTransformerEmbedder
from retrieval_bench.index.store import CodebaseIndex
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.types import Chunk
from tests.unit.index.fakes import CountingEmbedder, LineChunker

pytestmark = pytest.mark.integration

FILES = {
    "app/jsonio.py": "import json\n\ndef parse_json(text):\n    return json.loads(text)\n",
    "app/cart.py": "class Cart:\n    def total(self):\n        return sum(self.prices)\n"
    "\n    def add(self, item, price):\n        self.prices.append(price)\n",
    "app/db.py": "def connect(url):\n    pool = Pool(url)\n    return pool\n",
    "README.md": "# shop\n\nA tiny shop with a cart and a database.\n",
    "logo.png": "\x00\x01binary",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write(root, FILES)
    return root


@pytest.fixture
def fake() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def index(tmp_path: Path, fake: CountingEmbedder) -> CodebaseIndex:
    return CodebaseIndex(tmp_path / "lance", "shop", LineChunker(3), fake)


def _manifest(idx: CodebaseIndex) -> dict[str, Any]:
    manifest = idx.manifest()
    assert manifest is not None
    return manifest


def _paths(idx: CodebaseIndex) -> set[str]:
    return {c.path for c in idx.chunks()}


def _tables(idx: CodebaseIndex) -> list[str]:
    return [t for t in idx.db.list_tables().tables if t.startswith("shop__")]


def test_build_then_exists_and_round_trip(index: CodebaseIndex, repo: Path) -> None:
    assert not index.exists()
    seen: list[tuple[int, int, str]] = []
    stats = index.build(repo, lambda *event: seen.append(event))
    assert index.exists()
    assert seen[0] == (0, 4, "files") and seen[-1][0] == seen[-1][1]
    expected = sorted(
        (c for rel in sorted(FILES)[:-1] for c in _chunks_of(repo, rel)),
        key=lambda c: (c.path, c.start_line, c.end_line, c.id),
    )
    assert index.chunks() == expected  # every Chunk field survives LanceDB, symbol None too
    assert stats.chunks == len(expected) and stats.files == 4 and stats.files_added == 4
    assert stats.skipped == {"logo.png": "binary"}
    manifest = json.loads(index.manifest_path.read_text())
    assert manifest["table"] == stats.table and manifest["tokenizer"] == "whitespace"
    assert manifest["chunker"] == {"name": "lines", "config": {"lines": 3}}
    assert set(manifest["files"]) == {"README.md", "app/cart.py", "app/db.py", "app/jsonio.py"}
    corpus = index.corpus(repo)
    assert isinstance(corpus, Corpus) and corpus.skipped == {"logo.png": "binary"}
    assert len(corpus.chunks) == len(expected)


def test_progress_counts_files_then_embedding_batches(
    index: CodebaseIndex, repo: Path, fake: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real counts, reported smoothly: every file chunked, then every batch embedded
    (one embedding call for everything used to freeze the bar, then jump to the end)."""
    monkeypatch.setattr("retrieval_bench.index.store.EMBED_BATCH", 2)
    _write(repo, {f"gen/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(10)})
    seen: list[tuple[int, int, str]] = []
    index.build(repo, lambda *event: seen.append(event))
    files = [(d, t) for d, t, unit in seen if unit == "files"]
    embedded = [(d, t) for d, t, unit in seen if unit == "chunks embedded"]
    assert files == [(i, 14) for i in range(15)]  # 4 files + 10 generated, one report each
    total = embedded[0][1]
    assert total == len(set(fake.seen)) and total > 4
    assert [d for d, _ in embedded] == [0, *range(2, total, 2), total]  # a report a batch
    assert all(t == total for _, t in embedded)
    fractions = [d / t for d, t in files] + [1 + d / t for d, t in embedded]
    assert fractions == sorted(fractions)  # monotone over both phases
    steps = [b - a for a, b in zip(fractions, fractions[1:], strict=False)]
    assert max(steps) <= 0.5  # no jump: at most one batch of 2 out of > 4 at a time
    assert fake.calls == len(embedded) - 1  # one embedder call per reported batch


def _chunks_of(repo: Path, rel: str) -> list[Chunk]:
    from retrieval_bench.files import read_source_file

    source = read_source_file(repo, rel)
    assert source is not None
    return LineChunker(3).chunk_file(source)


def test_query_and_batch_query(index: CodebaseIndex, repo: Path) -> None:
    index.build(repo)
    hits = index.query("parse json loads", n=3)
    assert hits[0][0].path == "app/jsonio.py"
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0001
    vecs = index.embedder.embed(["parse json loads", "cart total prices"])
    batch = index.query_vectors(vecs, n=2)
    assert [c.id for c, _ in batch[0]] == [c.id for c, _ in hits[:2]]
    assert batch[1][0][0].path == "app/cart.py"
    assert batch[0][0][1] == pytest.approx(hits[0][1], abs=1e-5)


def test_update_touches_only_changed_added_removed(
    index: CodebaseIndex, repo: Path, fake: CountingEmbedder
) -> None:
    index.build(repo)
    first_table = _manifest(index)["table"]
    fake.seen.clear()
    noop = index.update(repo)
    assert noop.texts_embedded == 0 and fake.seen == [] and noop.table == first_table

    (repo / "app/db.py").write_text("def connect(url):\n    return Pool(url, size=4)\n")
    stats = index.update(repo)
    changed = {c.text for c in _chunks_of(repo, "app/db.py")}
    assert fake.seen and set(fake.seen) <= changed
    assert (stats.files_changed, stats.files_added, stats.files_removed) == (1, 0, 0)
    assert stats.files_unchanged == 3 and stats.texts_embedded == len(fake.seen)
    assert any("size=4" in c.text for c in index.chunks())
    assert not any("pool = Pool" in c.text for c in index.chunks())

    fake.seen.clear()
    (repo / "app/cart.py").unlink()
    _write(repo, {"app/tax.py": "def vat(amount):\n    return amount * 0.2\n"})
    stats = index.update(repo)
    assert (stats.files_added, stats.files_removed, stats.files_changed) == (1, 1, 0)
    assert set(fake.seen) <= {c.text for c in _chunks_of(repo, "app/tax.py")}
    assert _paths(index) == {"README.md", "app/db.py", "app/jsonio.py", "app/tax.py"}
    assert _tables(index) == [_manifest(index)["table"]]


def test_unchanged_text_moved_to_a_new_file_is_not_re_embedded(
    index: CodebaseIndex, repo: Path, fake: CountingEmbedder
) -> None:
    index.build(repo)
    fake.seen.clear()
    _write(repo, {"copy/jsonio.py": FILES["app/jsonio.py"]})
    stats = index.update(repo)
    assert fake.seen == [] and stats.files_added == 1
    assert "copy/jsonio.py" in _paths(index)


class Boom(RuntimeError):
    pass


def _explode_after(unit: str, fraction: float) -> Callable[[int, int, str], None]:
    def progress(done: int, total: int, what: str) -> None:
        if what == unit and total and done / total > fraction:
            raise Boom(f"interrupted at {done}/{total} {what}")

    return progress


@pytest.mark.parametrize("at", [("files", 0.1), ("chunks embedded", 0.0)])
@pytest.mark.parametrize("method", ["build", "update"])
def test_interrupted_build_leaves_previous_index_usable(
    index: CodebaseIndex, repo: Path, at: tuple[str, float], method: str
) -> None:
    index.build(repo)
    before = index.chunks()
    table = _manifest(index)["table"]
    (repo / "app/jsonio.py").write_text("def read_yaml(text):\n    return yaml.safe_load(text)\n")
    _write(repo, {f"gen/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    with pytest.raises(Boom):
        getattr(index, method)(repo, _explode_after(*at))
    assert index.exists()
    assert _manifest(index)["table"] == table
    assert index.chunks() == before
    assert index.query("parse json", 1)[0][0].path == "app/jsonio.py"
    index.update(repo)  # a later successful run switches over and drops leftovers
    assert any("read_yaml" in c.text for c in index.chunks())
    assert _tables(index) == [_manifest(index)["table"]]


def test_crash_between_table_write_and_manifest_switch(
    index: CodebaseIndex, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.build(repo)
    table = _manifest(index)["table"]

    def crash(*_args: object) -> None:
        raise Boom("power cut")

    monkeypatch.setattr("retrieval_bench.store.io.os.replace", crash)
    _write(repo, {"app/new.py": "def added():\n    return 1\n"})
    with pytest.raises(Boom):
        index.update(repo)
    assert len(_tables(index)) == 2  # the orphan table of the failed run
    assert index.exists() and _manifest(index)["table"] == table
    assert "app/new.py" not in _paths(index)
    monkeypatch.undo()
    index.update(repo)
    assert "app/new.py" in _paths(index) and _tables(index) == [_manifest(index)["table"]]


def test_concurrent_builds_of_one_index_are_serialised(
    index: CodebaseIndex, repo: Path, fake: CountingEmbedder
) -> None:
    twin = CodebaseIndex(index.uri, "shop", LineChunker(3), CountingEmbedder())
    errors: list[BaseException] = []

    def run(idx: CodebaseIndex) -> None:
        try:
            idx.build(repo, lambda *_event: time.sleep(0.005))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in (index, twin)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert index.exists() and _tables(index) == [_manifest(index)["table"]]
    assert index.query("parse json loads", 1)[0][0].path == "app/jsonio.py"


def test_exists_is_false_for_another_chunker_config(index: CodebaseIndex, repo: Path) -> None:
    index.build(repo)
    other = CodebaseIndex(index.uri, "shop", LineChunker(5), index.embedder)
    assert not other.exists()
    stats = other.update(repo)  # incompatible index: a full build
    assert stats.mode == "build" and other.exists() and not index.exists()


def test_missing_index_and_bad_inputs(tmp_path: Path, fake: CountingEmbedder) -> None:
    idx = CodebaseIndex(tmp_path / "x", "nothing", LineChunker(), fake)
    with pytest.raises(IndexBuildError, match="build it first"):
        idx.query("x")
    with pytest.raises(IndexBuildError, match="missing"):
        idx.build(tmp_path / "no-such-repo")
    with pytest.raises(IndexBuildError, match="invalid"):
        CodebaseIndex(tmp_path, "bad name/", LineChunker(), fake)
    idx.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    idx.manifest_path.write_text("{not json")
    assert not idx.exists()


def test_empty_repository_builds_an_empty_index(tmp_path: Path, fake: CountingEmbedder) -> None:
    (tmp_path / "empty").mkdir()
    idx = CodebaseIndex(tmp_path / "l", "e", LineChunker(), fake)
    assert idx.build(tmp_path / "empty").chunks == 0
    assert idx.exists() and idx.chunks() == [] and idx.query("x") == []


def test_dense_reuses_codebase_index_vectors(
    index: CodebaseIndex, repo: Path, tmp_path: Path
) -> None:
    index.build(repo)
    corpus = index.corpus(repo)
    fake = CountingEmbedder()  # same name as the index's embedder
    dense = DenseRetriever(embedder=fake, cache_dir=str(tmp_path / "cache"))
    dense.index(corpus, codebase_index=index)
    assert dense.reused == len(corpus.chunks) and fake.seen == []
    other = CountingEmbedder()
    via_uri = DenseRetriever(
        embedder=other, index_uri=str(index.uri), cache_dir=str(tmp_path / "c2")
    )
    via_uri.index(corpus)
    assert via_uri.reused == len(corpus.chunks) and other.seen == []
    run = dense.search({"q": "parse json loads"}, k=2)
    best = index.query("parse json loads", 2)
    assert run.ids("q") == [c.id for c, _ in best]


# ---------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(threads=2)


def test_minilm_embeddings_are_deterministic_and_normalised(
    minilm: SentenceTransformerEmbedder,
) -> None:
    texts = ["def parse_json(text): return json.loads(text)", "class Cart: pass"]
    a, b = minilm.embed(texts), minilm.embed(texts[::-1])
    assert a.shape == (2, 384) and a.dtype == np.float32 and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(a, b[::-1], atol=1e-5)


def test_minilm_ranks_json_parser_first(
    minilm: SentenceTransformerEmbedder, repo: Path, tmp_path: Path
) -> None:
    idx = CodebaseIndex(tmp_path / "lance", "real", LineChunker(4), minilm)
    idx.build(repo)
    hits = idx.query("how do I parse json", n=10)
    ranks = {c.path: i for i, (c, _) in reversed(list(enumerate(hits)))}
    assert ranks["app/jsonio.py"] < ranks["app/db.py"]
    assert ranks["app/jsonio.py"] < ranks["app/cart.py"]
    dense = DenseRetriever(embedder=minilm, cache_dir=str(tmp_path / "cache"))
    dense.index(idx.corpus(repo))
    assert dense.search({"q": "how do I parse json"}, 1).ids("q")[0] == hits[0][0].id


@pytest.mark.parametrize("chunker_name", ["window", "ast"])
def test_real_chunkers_with_minilm(
    chunker_name: str, minilm: SentenceTransformerEmbedder, repo: Path, tmp_path: Path
) -> None:
    registry = pytest.importorskip("retrieval_bench.contracts.registry")
    try:
        chunker = registry.create("chunkers", chunker_name)
    except Exception as exc:  # the chunkers are written in parallel; skip until they land
        pytest.skip(f"chunker {chunker_name!r} unavailable: {exc}")
    cache = EmbeddingCache.in_dir(tmp_path / "cache")
    embedder = CachedEmbedder(minilm, cache)
    idx = CodebaseIndex(tmp_path / "lance", chunker_name, chunker, embedder)
    idx.build(repo)
    assert idx.exists() and _manifest(idx)["tokenizer"] == chunker.tokenizer_name
    top = idx.query("how do I parse json", n=1)[0][0]
    assert top.path == "app/jsonio.py"
    (repo / "app/db.py").write_text("def connect(url):\n    return Pool(url, size=4)\n")
    embedder.reset_counters()
    stats = idx.update(repo)
    assert stats.files_changed == 1 and embedder.misses == stats.texts_embedded >= 1

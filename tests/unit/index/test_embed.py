"""Embedding cache and cached embedder: one embedding per (text hash, model)
(docs/architecture.md#caches)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import (
    DEFAULT_MODEL_NAME,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    normalize_rows,
    resolve_threads,
    text_hash,
)
from tests.unit.index.fakes import CountingEmbedder


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[EmbeddingCache]:
    c = EmbeddingCache.in_dir(tmp_path / "emb")
    yield c
    c.close()


def test_text_hash_is_sha256_of_utf8() -> None:
    assert text_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_hash("é") != text_hash("e")


def test_normalize_rows_keeps_zero_rows_zero() -> None:
    v = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert v.dtype == np.float32
    np.testing.assert_allclose(v, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_cache_round_trip_and_model_separation(cache: EmbeddingCache) -> None:
    hashes = [text_hash("a"), text_hash("b")]
    vecs = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    cache.put_many("m1", hashes, vecs)
    got = cache.get_many("m1", [*hashes, text_hash("zzz")])
    assert set(got) == set(hashes)
    np.testing.assert_array_equal(got[hashes[1]], vecs[1])
    assert got[hashes[0]].dtype == np.float32
    assert cache.get_many("m2", hashes) == {}
    assert cache.count("m1") == 2 and cache.count() == 2


def test_cache_persists_across_reopen(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite") as c:
        c.put_many("m", [text_hash("x")], np.ones((1, 3), dtype=np.float32))
    with EmbeddingCache(tmp_path / "c.sqlite") as c:
        np.testing.assert_array_equal(c.get_many("m", [text_hash("x")])[text_hash("x")], [1, 1, 1])


def test_cache_lookup_of_many_keys_spans_batches(cache: EmbeddingCache) -> None:
    texts = [f"text {i}" for i in range(1234)]
    hashes = [text_hash(t) for t in texts]
    vecs = np.arange(1234 * 2, dtype=np.float32).reshape(1234, 2)
    cache.put_many("m", hashes, vecs)
    got = cache.get_many("m", hashes)
    assert len(got) == 1234
    np.testing.assert_array_equal(got[hashes[1000]], vecs[1000])


def test_cached_embedder_second_call_makes_no_model_calls(cache: EmbeddingCache) -> None:
    fake = CountingEmbedder()
    emb = CachedEmbedder(fake, cache)
    texts = ["def parse_json(s): ...", "class Cart: ...", "print('hi')"]
    first = emb.embed(texts)
    assert (emb.misses, emb.hits, fake.calls) == (3, 0, 1)
    second = emb.embed(texts)
    assert (emb.misses, emb.hits, fake.calls) == (3, 3, 1)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, fake.embed(texts), rtol=1e-6)


def test_cached_embedder_embeds_only_misses_and_duplicates_once(cache: EmbeddingCache) -> None:
    fake = CountingEmbedder()
    emb = CachedEmbedder(fake, cache)
    emb.embed(["a b", "c d"])
    fake.seen.clear()
    out = emb.embed(["a b", "new text", "new text", "c d"])
    assert fake.seen == ["new text"]
    assert (emb.hits, emb.misses) == (2, 3)
    assert out.shape == (4, fake.dim)
    np.testing.assert_array_equal(out[1], out[2])


class _FailsOnThirdCall(CountingEmbedder):
    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
        if self.calls == 2:
            raise RuntimeError("stopped")
        return super().embed(texts)


def test_a_stopped_cold_embedding_keeps_the_steps_it_stored(cache: EmbeddingCache) -> None:
    texts = [f"text number {chr(97 + i)}" for i in range(7)]
    emb = CachedEmbedder(_FailsOnThirdCall(), cache)
    emb.store_every = 3  # steps of 3 texts: stored, stored, then the model fails
    with pytest.raises(RuntimeError, match="stopped"):
        emb.embed(texts)
    assert cache.count("fake-bow") == 6
    again = CachedEmbedder(CountingEmbedder(), cache)
    out = again.embed(texts)
    assert again.embedder.seen == [texts[6]]  # type: ignore[attr-defined]
    expected = CountingEmbedder().embed(texts)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_cache_is_shared_across_embedder_instances(tmp_path: Path) -> None:
    texts = ["alpha", "beta"]
    with EmbeddingCache.in_dir(tmp_path) as c:
        CachedEmbedder(CountingEmbedder(), c).embed(texts)
    with EmbeddingCache.in_dir(tmp_path) as c:
        fake = CountingEmbedder()
        emb = CachedEmbedder(fake, c)
        emb.embed(texts)
        assert fake.calls == 0 and emb.hits == 2
        other = CountingEmbedder(name="another-model")
        CachedEmbedder(other, c).embed(texts)
        assert other.calls == 1  # a different model never reuses these vectors


def test_empty_input_returns_empty_matrix(cache: EmbeddingCache) -> None:
    fake = CountingEmbedder(dim=8)
    out = CachedEmbedder(fake, cache).embed([])
    assert out.shape == (0, 8) and fake.calls == 0


def test_resolve_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RBENCH_THREADS", raising=False)
    assert resolve_threads(None) is None
    assert resolve_threads(3) == 3
    monkeypatch.setenv("RBENCH_THREADS", "1")
    assert resolve_threads(None) == 1
    assert resolve_threads(2) == 2


def test_sentence_transformer_embedder_is_lazy_and_named() -> None:
    emb = SentenceTransformerEmbedder(threads=1)
    assert emb.name == DEFAULT_MODEL_NAME
    assert emb._model is None  # nothing loaded until first use
    assert (emb.model_path / "config.json").exists()
    typed: Embedder = emb  # satisfies the protocol statically
    assert typed.name == DEFAULT_MODEL_NAME
    assert emb._model is None
    assert SentenceTransformerEmbedder("/some/models/my-model").name == "my-model"


def test_missing_model_path_is_a_clear_error(tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(tmp_path / "nope")
    with pytest.raises(ConfigError, match="does not exist"):
        emb.embed(["x"])

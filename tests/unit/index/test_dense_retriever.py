"""Dense retriever (docs/stages.md#dense): exact cosine top-k over an in-memory matrix,
cached embeddings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.types import Chunk
from tests.unit.index.fakes import CountingEmbedder


def _chunk(i: int, text: str) -> Chunk:
    return Chunk(f"c{i}", f"f{i}.py", 1, 1, "python", "function", None, text)


TEXTS = [
    "parse json string into a dict",
    "json encoder writes a dict as json",
    "compute the shopping cart total price",
    "open a database connection pool",
    "render the html template for the page",
]


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return Corpus(tmp_path, [_chunk(i, t) for i, t in enumerate(TEXTS)])


def _retriever(tmp_path: Path, fake: CountingEmbedder | None = None) -> DenseRetriever:
    return DenseRetriever(embedder=fake or CountingEmbedder(), cache_dir=str(tmp_path / "cache"))


def test_registered_as_dense() -> None:
    assert registry.RETRIEVERS.get("dense") is DenseRetriever
    assert DenseRetriever.uses_vector_index and not DenseRetriever.needs_llm


def test_top_k_ordering_matches_brute_force(tmp_path: Path, corpus: Corpus) -> None:
    fake = CountingEmbedder()
    r = _retriever(tmp_path, fake)
    r.index(corpus)
    queries = {"q1": "parse json", "q2": "cart total price", "q3": "html page"}
    run = r.search(queries, k=3)
    matrix = fake.embed(TEXTS)
    for qid, text in queries.items():
        scores = matrix @ fake.embed([text])[0]
        expected = sorted(range(len(TEXTS)), key=lambda i: (-scores[i], f"c{i}"))[:3]
        ranked = run.ranked(qid)
        assert [cid for cid, _ in ranked] == [f"c{i}" for i in expected]
        assert [s for _, s in ranked] == pytest.approx([float(scores[i]) for i in expected])
    assert run.ids("q1", 1) == ["c0"]
    assert run.ids("q2", 1) == ["c2"]


def test_k_larger_than_corpus_returns_everything(tmp_path: Path, corpus: Corpus) -> None:
    r = _retriever(tmp_path)
    r.index(corpus)
    run = r.search({"q": "json"}, k=50)
    assert len(run.scores["q"]) == len(TEXTS)
    scores = [s for _, s in run.ranked("q")]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0001 <= s <= 1.0001 for s in scores)


def test_empty_corpus_and_zero_k(tmp_path: Path) -> None:
    r = _retriever(tmp_path)
    r.index(Corpus(tmp_path, []))
    assert r.search({"q": "anything"}, k=5).scores == {"q": {}}
    assert r.search({}, k=5).scores == {}


def test_second_index_is_served_by_the_cache(tmp_path: Path, corpus: Corpus) -> None:
    _retriever(tmp_path).index(corpus)
    fake = CountingEmbedder()
    r = _retriever(tmp_path, fake)
    r.index(corpus)
    assert fake.calls == 0
    assert r.cached_embedder.hits == len(TEXTS) and r.cached_embedder.misses == 0


def test_default_cache_is_the_workspace_embeddings_folder(
    tmp_path: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RBENCH_CACHE", raising=False)
    r = DenseRetriever(embedder=CountingEmbedder())
    r.index(corpus)
    assert (tmp_path / "home" / "cache" / "embeddings" / "embeddings.sqlite").exists()


def test_transform_queries_hook_is_identity(tmp_path: Path) -> None:
    q = np.eye(3, dtype=np.float32)
    assert _retriever(tmp_path).transform_queries(q) is q


def test_many_queries_span_query_blocks(tmp_path: Path, corpus: Corpus) -> None:
    r = _retriever(tmp_path)
    r.index(corpus)
    queries = {f"q{i}": TEXTS[i % len(TEXTS)] for i in range(600)}
    run = r.search(queries, k=2)
    assert len(run) == 600
    assert all(run.ids(f"q{i}", 1) == [f"c{i % len(TEXTS)}"] for i in range(600))


def test_ties_at_the_cut_go_to_the_smaller_chunk_id(tmp_path: Path) -> None:
    same = "identical text"
    chunks = [_chunk(i, same) for i in (9, 1, 5, 3)] + [_chunk(0, "other words entirely")]
    r = _retriever(tmp_path)
    r.index(Corpus(tmp_path, chunks))
    assert r.search({"q": same}, k=2).ids("q") == ["c1", "c3"]
    assert r.search({"q": same}, k=4).ids("q") == ["c1", "c3", "c5", "c9"]

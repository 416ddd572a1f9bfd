"""The learned query adapter and dense-adapted (docs/stages.md#dense-adapted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import normalize_rows
from retrieval_bench.retrieval.adapter import (
    NEEDS_TRAINING,
    AdaptedDenseRetriever,
    positive_chunk_ids,
)
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.retrieval.linear_adapter import LinearAdapter, info_nce
from retrieval_bench.types import Chunk, Example, Span
from tests.unit.index.fakes import CountingEmbedder

REPO_ROOT = Path(__file__).resolve().parents[3]


def _rotated_problem(n: int = 300, d: int = 16, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Positives p and queries q = unit(A p + noise), A a fixed rotation times a scaling."""
    rng = np.random.default_rng(seed)
    p = normalize_rows(rng.normal(size=(n, d)))
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    a = rotation @ np.diag(np.linspace(0.3, 3.0, d))
    q = normalize_rows(p @ a.T + 0.05 * rng.normal(size=(n, d)))
    return q, p


def _positive_cos_and_r1(q: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    s = q @ p.T
    return float(np.mean(np.diag(s))), float(np.mean(s.argmax(axis=1) == np.arange(len(q))))


def test_fit_learns_a_rotation_and_generalises() -> None:
    q, p = _rotated_problem()
    adapter = LinearAdapter.fit(q[:200], p[:200], lr=1e-2, steps=300)
    before = _positive_cos_and_r1(q[200:], p[200:])  # held-out pairs
    after = _positive_cos_and_r1(adapter.transform(q[200:]), p[200:])
    assert after[0] > before[0] + 0.5
    assert after[1] > before[1] + 0.5 and after[1] >= 0.9
    assert adapter.meta["loss_last"] < adapter.meta["loss_first"]
    assert adapter.meta["pairs"] == 200 and adapter.meta["queries"] == 200


def test_fit_is_deterministic_and_seeded() -> None:
    q, p = _rotated_problem(n=120)
    neg = normalize_rows(np.random.default_rng(5).normal(size=(120 * 2, 16))).reshape(120, 2, 16)
    a = LinearAdapter.fit(q, p, neg, steps=40, batch_size=32, seed=3)
    b = LinearAdapter.fit(q, p, neg, steps=40, batch_size=32, seed=3)
    c = LinearAdapter.fit(q, p, neg, steps=40, batch_size=32, seed=4)
    assert np.array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert a.meta["hard_negatives"] == 2


def test_zero_steps_or_huge_regularisation_keep_the_identity() -> None:
    q, p = _rotated_problem(n=40)
    assert np.array_equal(LinearAdapter.fit(q, p, steps=0).matrix, np.eye(16, dtype=np.float32))
    near = LinearAdapter.fit(q, p, reg=1e6, lr=1e-3, steps=50).matrix
    assert np.abs(near - np.eye(16)).max() < 0.01


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    d, b = 6, 4
    w = np.eye(d) + 0.2 * rng.normal(size=(d, d))
    q = normalize_rows(rng.normal(size=(b, d))).astype(np.float64)
    p = normalize_rows(rng.normal(size=(b, d))).astype(np.float64)
    neg = normalize_rows(rng.normal(size=(b * 3, d))).reshape(b, 3, d).astype(np.float64)
    mask = np.zeros((b, b), dtype=bool)
    mask[0, 1] = mask[1, 0] = True  # pairs 0 and 1 share a query
    _, grad = info_nce(w, q, p, neg, mask, 0.05)
    numeric = np.zeros_like(w)
    eps = 1e-6
    for i in range(d):
        for j in range(d):
            step = np.zeros_like(w)
            step[i, j] = eps
            hi, _ = info_nce(w + step, q, p, neg, mask, 0.05)
            lo, _ = info_nce(w - step, q, p, neg, mask, 0.05)
            numeric[i, j] = (hi - lo) / (2 * eps)
    assert np.allclose(grad, numeric, atol=1e-6)


def test_bad_shapes() -> None:
    q, p = _rotated_problem(n=10)
    with pytest.raises(ValueError, match="aligned"):
        LinearAdapter.fit(q, p[:5])
    with pytest.raises(ValueError, match="negatives"):
        LinearAdapter.fit(q, p, np.zeros((3, 2, 16)))
    with pytest.raises(ValueError, match="groups"):
        LinearAdapter.fit(q, p, groups=[0, 1])
    with pytest.raises(ConfigError, match="16-dimensional"):
        LinearAdapter.identity(16).transform(np.zeros((2, 8)))


def test_transform_is_unit_norm_w_times_v() -> None:
    rng = np.random.default_rng(2)
    w = rng.normal(size=(5, 5))
    v = rng.normal(size=(3, 5))
    out = LinearAdapter(w).transform(v)
    assert out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    expected = (w @ v.T).T
    assert np.allclose(out, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)


def test_save_load_round_trip(tmp_path: Path) -> None:
    q, p = _rotated_problem(n=30)
    a = LinearAdapter.fit(q, p, steps=5, embedder="fake-bow")
    npy = a.save(tmp_path / "sub" / "adapter")
    assert npy.name == "adapter.npy" and npy.with_suffix(".json").is_file()
    for ref in (npy, tmp_path / "sub" / "adapter", npy.with_suffix(".json")):
        b = LinearAdapter.load(ref)
        assert np.array_equal(a.matrix, b.matrix)
        assert b.meta["embedder"] == "fake-bow" and b.meta["steps"] == 5 and b.meta["dim"] == 16
        assert np.array_equal(a.transform(q), b.transform(q))
    with pytest.raises(ConfigError, match="cannot be read"):
        LinearAdapter.load(tmp_path / "missing.npy")


# -- dense-adapted over a toy corpus: questions speak of money, the code of prices

TEXTS = {
    "pricing.py": "compute the cart total price with tax",
    "users.py": "load the user profile record from storage",
    "http.py": "send the http request with retry and timeout",
    "render.py": "render the html template into a page",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    chunks = [Chunk(f"c-{p}", p, 1, 1, "python", "file", None, t) for p, t in TEXTS.items()]
    return Corpus(tmp_path, chunks)


def _examples() -> list[Example]:
    rows = [
        ("t1", "how much money does the customer owe", "pricing.py"),
        ("t2", "which account data do we keep about a person", "users.py"),
        ("t3", "how do we talk to remote servers", "http.py"),
        ("t4", "how is the screen drawn", "render.py"),
    ]
    return [Example(i, q, (f,), split="dev") for i, q, f in rows]


def _adapted(tmp_path: Path, **params: Any) -> AdaptedDenseRetriever:
    return AdaptedDenseRetriever(
        embedder=CountingEmbedder(), cache_dir=str(tmp_path / "cache"), **params
    )


def test_dense_adapted_is_registered_and_needs_training(tmp_path: Path, corpus: Corpus) -> None:
    assert registry.get("retrievers", "dense-adapted") is AdaptedDenseRetriever
    r = _adapted(tmp_path)
    r.index(corpus)
    with pytest.raises(ConfigError, match="train_split"):
        r.search({"q": "money"}, k=2)
    assert "dense-adapted needs a training split" in NEEDS_TRAINING
    with pytest.raises(ConfigError, match="train_split"):
        r.fit([], corpus)
    unknown = Example("x", "money", ("nowhere.py",))
    with pytest.raises(ConfigError, match="no gold|has gold"):
        r.fit([unknown], corpus)
    with pytest.raises(RuntimeError, match="before index"):
        _adapted(tmp_path).fit(_examples(), corpus)


def test_fit_then_search_ranks_training_gold_first(tmp_path: Path, corpus: Corpus) -> None:
    examples = _examples()
    queries = {ex.id: ex.query for ex in examples}
    plain = DenseRetriever(embedder=CountingEmbedder(), cache_dir=str(tmp_path / "cache"))
    plain.index(corpus)
    before = sum(
        plain.search(queries, 1).ids(ex.id) == [f"c-{ex.gold_files[0]}"] for ex in examples
    )
    r = _adapted(tmp_path, lr=1e-2, steps=200, hard_negatives=2, save_to=str(tmp_path / "ad"))
    r.index(corpus)
    adapter = r.fit(examples, corpus)
    run = r.search(queries, k=1)
    after = sum(run.ids(ex.id) == [f"c-{ex.gold_files[0]}"] for ex in examples)
    assert after == len(examples) > before
    assert r.fit_report["pairs"] == 4 and r.fit_report["skipped"] == []
    assert r.fit_report["hard_negatives"] == 2 and adapter.meta["embedder"] == "fake-bow"
    # the saved adapter gives the plain dense retriever the same results
    reloaded = DenseRetriever(
        embedder=CountingEmbedder(), cache_dir=str(tmp_path / "cache"), adapter=str(tmp_path / "ad")
    )
    reloaded.index(corpus)
    got, want = reloaded.search(queries, 4), r.search(queries, 4)
    for qid in queries:
        assert got.scores[qid] == pytest.approx(want.scores[qid])


def test_dense_refuses_an_adapter_of_another_model(tmp_path: Path) -> None:
    LinearAdapter.fit(*_rotated_problem(n=8), steps=1, embedder="other-model").save(tmp_path / "a")
    with pytest.raises(ConfigError, match="other-model"):
        DenseRetriever(embedder=CountingEmbedder(), adapter=str(tmp_path / "a"))


def test_positive_chunks_follow_gold_spans(tmp_path: Path) -> None:
    chunks = [
        Chunk("a1", "a.py", 1, 10, "python", "function", "f", "x"),
        Chunk("a2", "a.py", 11, 20, "python", "function", "g", "y"),
        Chunk("a3", "a.py", 21, 30, "python", "function", "h", "z"),
        Chunk("b1", "b.py", 1, 5, "python", "file", None, "w"),
    ]
    corpus = Corpus(tmp_path, chunks)
    whole = Example("e", "q", ("a.py", "b.py"))
    assert positive_chunk_ids(whole, corpus) == ["a1", "a2", "a3", "b1"]
    spans = Example("e", "q", ("a.py", "b.py"), gold_spans=(Span("a.py", 10, 12),))
    assert positive_chunk_ids(spans, corpus) == ["a1", "a2", "b1"]


@pytest.mark.integration
def test_dense_adapted_on_the_fixture_repositories(monkeypatch: pytest.MonkeyPatch) -> None:
    """Train on each fixture repo's dev split, score its test split, next to plain dense.

    Only that it runs is asserted: the test splits are small (29 questions).
    """
    from retrieval_bench.contracts.chunker import chunk_tree
    from retrieval_bench.datasets.jsonl import load_examples
    from retrieval_bench.files import WalkReport
    from retrieval_bench.metrics.retrieval.scoring import evaluate_stage

    cache = str(REPO_ROOT / ".rbench" / "test-cache" / "embeddings")
    totals: dict[str, list[float]] = {"dense": [0.0, 0.0], "dense-adapted": [0.0, 0.0]}
    n_test = 0
    for repo in ("shopapi", "webapp", "logtool"):
        root = REPO_ROOT / "fixtures" / "repos" / repo
        chunker = registry.create("chunkers", "ast", budget=512)
        corpus = Corpus(root, list(chunk_tree(root, chunker, WalkReport())), chunker.tokenizer_name)
        examples = load_examples(root / "questions.jsonl").examples
        dev = [e for e in examples if e.split == "dev"]
        test = [e for e in examples if e.split == "test"]
        queries = {e.id: e.query for e in test}
        plain = DenseRetriever(cache_dir=cache)
        plain.index(corpus)
        adapted = AdaptedDenseRetriever(cache_dir=cache)
        adapted.index(corpus)
        adapted.fit(dev, corpus)
        assert adapted.fit_report["pairs"] >= len(dev) - len(adapted.fit_report["skipped"])
        for name, retriever in (("dense", plain), ("dense-adapted", adapted)):
            m = evaluate_stage(retriever.search(queries, 50), test, corpus)
            totals[name][0] += m.means["R@5"] * len(test)
            totals[name][1] += m.means["MRR"] * len(test)
        n_test += len(test)
    for name, (r5, mrr) in totals.items():
        print(f"{name}: R@5={r5 / n_test:.3f} MRR={mrr / n_test:.3f} over {n_test} test questions")
        assert 0.0 <= r5 / n_test <= 1.0 and 0.0 <= mrr / n_test <= 1.0

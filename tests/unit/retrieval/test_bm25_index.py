"""The fast ``bm25`` index build: the token memo and the whole-array scores give the
very index ``bm25s`` builds, bit for bit (docs/stages.md#bm25)."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pytest

from retrieval_bench.chunking.cache import CACHE_ENV
from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval import bm25_index, token_memo
from retrieval_bench.retrieval.bm25 import METHODS, BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.types import Chunk

TEXTS = [
    "def parseJsonLine(line):\n    return json.loads(line)",
    "class HTTPServer(BaseServer):\n    def handle_request(self, req): return req",
    "def charge(order, amount):\n    return gateway.charge(amount, order.currency)",
    "class HTTPServer(BaseServer):\n    def handle_request(self, req): return req",
    "...",
    "x = x + x + x  # repeated terms: term frequency 3 and more\nx = y",
    "",
]
QUERIES = {"a": "parse json line", "b": "http server request", "c": "charge the x amount"}


def _corpus(texts: list[str] = TEXTS) -> Corpus:
    chunks = [
        Chunk(f"c{i}", f"src/mod_{i % 3}.py", 1, 2, "python", "file", None, t)
        for i, t in enumerate(texts)
    ]
    return Corpus(Path("."), chunks)


def _same_index(a: BM25Retriever, b: BM25Retriever) -> None:
    assert list(a._vocab.items()) == list(b._vocab.items())  # same ids, same order
    assert a._model is not None and b._model is not None
    for key in ("data", "indices", "indptr"):
        x, y = a._model.scores[key], b._model.scores[key]
        assert x.dtype == y.dtype and np.array_equal(x, y), key
    assert a._model.scores["num_docs"] == b._model.scores["num_docs"]
    na, nb = a._model.nonoccurrence_array, b._model.nonoccurrence_array
    assert (na is None) == (nb is None)
    if na is not None:
        assert na.dtype == nb.dtype and np.array_equal(na, nb)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
def test_fast_build_equals_bm25s(method: str, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus()
    fast = BM25Retriever(method=method, dtype=dtype)
    fast.index(corpus)
    assert bm25_index._VERIFIED[bm25_index._params(bm25s.BM25(method=method, dtype=dtype))]
    monkeypatch.setenv(CACHE_ENV, "0")  # no token memo
    monkeypatch.setattr(bm25_index, "_verified", lambda model: False)  # bm25s builds
    plain = BM25Retriever(method=method, dtype=dtype)
    plain.index(corpus)
    assert type(plain._model) is bm25s.BM25
    _same_index(fast, plain)
    assert fast.search(QUERIES, 5).scores == plain.search(QUERIES, 5).scores


def test_memo_follows_each_corpus() -> None:
    """Texts seen before (in another corpus, another order) give the same index as a
    fresh tokenisation."""
    memoised = BM25Retriever()
    memoised.index(_corpus(list(reversed(TEXTS))))
    memoised.index(_corpus(TEXTS[1:] + ["def brand_new(token): pass"]))
    fresh = BM25Retriever()
    chunks = _corpus(TEXTS[1:] + ["def brand_new(token): pass"]).chunks
    fresh.index_tokens([c.id for c in chunks], [fresh.doc_tokens(c) for c in chunks])
    _same_index(memoised, fresh)


def test_memo_only_for_code_tokenizer_and_only_with_the_cache_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Lower(CodeTokenizer):
        def tokenize(self, text: str) -> list[str]:
            return text.lower().split()

    assert token_memo.memo_for(CodeTokenizer()) is token_memo.memo_for(CodeTokenizer())
    assert token_memo.memo_for(CodeTokenizer(min_len=3)) is not token_memo.memo_for(CodeTokenizer())
    assert token_memo.memo_for(Lower()) is None
    assert token_memo.memo_for(str.split) is None
    monkeypatch.setenv(CACHE_ENV, "0")
    assert token_memo.memo_for(CodeTokenizer()) is None
    custom = BM25Retriever(tokenizer=Lower())
    custom.index(_corpus())
    assert custom.search({"q": "parsejsonline(line):"}, 3).ids("q") == ["c0"]

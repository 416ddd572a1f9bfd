"""BM25Retriever behaviour: empty/unknown queries, k, ties, paths, registry, config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.types import Chunk


def _chunk(cid: str, path: str, text: str) -> Chunk:
    return Chunk(cid, path, 1, text.count("\n") + 1, "python", "file", None, text)


@pytest.fixture
def corpus() -> Corpus:
    return Corpus(
        Path("."),
        [
            _chunk(
                "a", "src/json_utils.py", "def parseJsonLine(line):\n    return json.loads(line)"
            ),
            _chunk(
                "b", "src/server.py", "class HTTPServer:\n    def handle_request(self, req): ..."
            ),
            _chunk(
                "c",
                "src/payment.py",
                "def charge(order, amount):\n    return gateway.charge(amount)",
            ),
            _chunk(
                "d", "app/server.py", "class HTTPServer:\n    def handle_request(self, req): ..."
            ),
            _chunk("e", "docs/empty.md", "..."),
        ],
    )


def test_finds_split_identifier_and_path(corpus: Corpus) -> None:
    bm25 = BM25Retriever()
    bm25.index(corpus)
    run = bm25.search({"q1": "parse a json line", "q2": "payment", "q3": "http request"}, k=3)
    assert run.ids("q1")[0] == "a"
    assert run.ids("q2") == ["c"]  # only in the path
    assert run.ids("q3") == ["b", "d"]  # identical chunks tie: ordered by chunk id
    assert run.scores["q3"]["b"] == run.scores["q3"]["d"]
    assert run.name == "bm25"


def test_include_path_off(corpus: Corpus) -> None:
    bm25 = BM25Retriever(include_path=False)
    bm25.index(corpus)
    assert bm25.search({"q": "payment"}, 5).ids("q") == []


def test_unknown_or_empty_queries_give_empty_lists(corpus: Corpus) -> None:
    bm25 = BM25Retriever()
    bm25.index(corpus)
    run = bm25.search({"none": "zzzz qqqq", "stop": "the of and", "blank": ""}, k=5)
    assert run.scores == {"none": {}, "stop": {}, "blank": {}}
    assert bm25.query_tokens("zzzz json") == ["json"]


def test_k_limits_and_scores_descend(corpus: Corpus) -> None:
    bm25 = BM25Retriever()
    bm25.index(corpus)
    ranked = bm25.search({"q": "server request charge json src"}, k=2).ranked("q")
    assert len(ranked) == 2
    assert ranked[0][1] >= ranked[1][1]
    assert bm25.search({"q": "json"}, k=0).scores == {"q": {}}


def test_empty_corpus_and_tokenless_corpus() -> None:
    for chunks in ([], [_chunk("x", "a", "...")]):
        bm25 = BM25Retriever(include_path=False)
        bm25.index(Corpus(Path("."), chunks))
        assert bm25.search({"q": "anything"}, 3).scores == {"q": {}}


def test_custom_tokenizer_and_config(corpus: Corpus) -> None:
    bm25 = BM25Retriever(tokenizer=CodeTokenizer(stopwords=()), method="atire", k1=1.2, b=0.5)
    bm25.index(corpus)
    assert bm25.search({"q": "self"}, 5).ids("q") == ["b", "d"]
    cfg = bm25.config()
    assert cfg["method"] == "atire" and cfg["k1"] == 1.2 and cfg["idf_method"] == "atire"


def test_registered_and_bad_params_rejected() -> None:
    made = registry.create("retrievers", "bm25", method="robertson", include_path=False)
    assert isinstance(made, BM25Retriever)
    with pytest.raises(ConfigError, match="method"):
        BM25Retriever(method="okapi")
    with pytest.raises(ConfigError, match="dtype"):
        BM25Retriever(dtype="float16")
    with pytest.raises(ConfigError, match="unknown parameter 'nonsense'"):
        registry.create("retrievers", "bm25", nonsense=1)
    with pytest.raises(ConfigError, match="unknown parameter 'krrf'"):
        BM25Retriever(krrf=60)
    with pytest.raises(ConfigError, match="k1: Input should be a valid number"):
        BM25Retriever(k1="high")


def test_params_build_the_same_stage_as_keywords(corpus: Corpus) -> None:
    """``Params`` (or a mapping read as one) and keywords give the same stage; the
    tokenizer object and the run name stay keywords, outside ``Params``."""
    params = BM25Retriever.Params(k1=1.2, method="atire", query="issue", stopwords=["def"])
    made = registry.RETRIEVERS.create(
        "bm25", {"k1": 1.2, "method": "atire"}, query="issue", stopwords=("def",)
    )
    by_keywords = BM25Retriever(k1=1.2, method="atire", query="issue", stopwords=["def"])
    assert isinstance(made, BM25Retriever) and made.params == params
    assert BM25Retriever(params).params is params
    runs = []
    for bm25 in (made, by_keywords, BM25Retriever(params, name="other")):
        assert bm25.config() == by_keywords.config()
        bm25.index(corpus)
        runs.append(bm25.search({"q": "parse json line charge"}, 3).scores)
    assert runs[0] == runs[1] == runs[2]
    assert BM25Retriever(params, name="other").name == "other"
    assert "tokenizer" not in BM25Retriever.Params.model_fields
    assert "name" not in BM25Retriever.Params.model_fields

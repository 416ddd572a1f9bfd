"""The on-disk term counts (docs/architecture.md#caches): an index assembled from
stored blocks is the index a fresh tokenisation builds, bit for bit, in another
process's memo, after damage, and with terms added by two stores at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval import token_memo
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.file_bm25 import FileBM25Retriever
from retrieval_bench.retrieval.term_store import (
    Block,
    TermStore,
    block_key,
    decode_block,
    encode_block,
)
from retrieval_bench.store import sqlite_cache
from retrieval_bench.types import Chunk

FILES = {
    "src/http_server.py": [
        "class HTTPServer(BaseServer):\n    def handle_request(self, req): return req",
        "def parseJsonLine(line):\n    return json.loads(line) + parse(line)",
    ],
    "src/pay/charge.py": ["def charge(order, amount):\n    return gateway.charge(amount)"],
    "src/empty.py": ["..."],
    "src/repeat.py": ["x = x + x + x  # term frequency 3\nx = y", "server json charge"],
}
QUERIES = {"a": "parse json line", "b": "http server request", "c": "charge the x amount"}


def _corpus(files: dict[str, list[str]], cache: Path | None) -> Corpus:
    """The files' chunks; ``cache``: the workspace cache folder (terms under ``terms/``)."""
    chunks = [
        Chunk(f"{path}#{i}", path, i + 1, i + 1, "python", "file", None, text)
        for path, texts in files.items()
        for i, text in enumerate(texts)
    ]
    corpus = Corpus(Path("."), chunks)
    corpus.cache_dir = cache
    return corpus


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget every memo and open store, as a new process would."""
    monkeypatch.setattr(token_memo, "_MEMOS", {})
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})


def _index(files: dict[str, list[str]], cache: Path | None, **params: object) -> BM25Retriever:
    r = BM25Retriever(**params)  # type: ignore[arg-type]
    r.index(_corpus(files, cache))
    return r


def _same(a: BM25Retriever, b: BM25Retriever) -> None:
    assert list(a._vocab.items()) == list(b._vocab.items())
    assert a._model is not None and b._model is not None
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(a._model.scores[key], b._model.scores[key]), key
    assert a.search(QUERIES, 5).scores == b.search(QUERIES, 5).scores


@pytest.mark.parametrize("include_path", [True, False])
def test_a_later_process_reads_the_blocks_and_builds_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, include_path: bool
) -> None:
    _fresh_process(monkeypatch)
    plain = _index(FILES, None, include_path=include_path)
    first = _index(FILES, tmp_path, include_path=include_path)
    _same(first, plain)
    assert TermStore.in_dir(tmp_path / "terms").count() == len(FILES)
    _fresh_process(monkeypatch)
    calls: list[str] = []
    real = CodeTokenizer.tokenize

    def counted(self: CodeTokenizer, text: str) -> list[str]:
        calls.append(text)
        return real(self, text)

    monkeypatch.setattr(CodeTokenizer, "tokenize", counted)
    again = _index(FILES, tmp_path, include_path=include_path)
    _same(again, plain)
    assert not [t for texts in FILES.values() for t in texts if t in calls]  # none tokenised


def test_a_changed_file_is_a_new_block_and_other_orders_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_process(monkeypatch)
    _index(FILES, tmp_path)
    changed = dict(reversed(list(FILES.items())))
    changed["src/pay/charge.py"] = ["def refund(order):\n    return gateway.refund(order)"]
    _fresh_process(monkeypatch)
    cached = _index(changed, tmp_path)
    _same(cached, _index(changed, None))
    assert TermStore.in_dir(tmp_path / "terms").count() == len(FILES) + 1


def test_whole_file_documents_come_from_blocks_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_process(monkeypatch)
    corpus = _corpus(FILES, tmp_path)
    first = FileBM25Retriever(doc="file")
    first.index(corpus)
    _fresh_process(monkeypatch)
    again = FileBM25Retriever(doc="file")
    again.index(_corpus(FILES, tmp_path))
    plain = FileBM25Retriever(doc="file")
    plain.index(_corpus(FILES, None))
    assert again.search(QUERIES, 5).scores == plain.search(QUERIES, 5).scores
    assert first.search(QUERIES, 5).scores == plain.search(QUERIES, 5).scores


def test_analysers_do_not_share_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh_process(monkeypatch)
    _index(FILES, tmp_path)
    _fresh_process(monkeypatch)
    other = _index(FILES, tmp_path, min_len=3, digits="drop")
    _same(other, _index(FILES, None, min_len=3, digits="drop"))
    assert TermStore.in_dir(tmp_path / "terms").count() == 2 * len(FILES)
    assert block_key("a", ["x"]) != block_key("b", ["x"])
    assert block_key("a", ["ab", "c"]) != block_key("a", ["a", "bc"])


def test_a_damaged_block_is_dropped_and_the_file_tokenised_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _fresh_process(monkeypatch)
    _index(FILES, tmp_path)
    with sqlite3.connect(tmp_path / "terms" / "terms.sqlite") as conn:
        conn.execute("UPDATE blocks SET data = ? ", (np.array([1, 2, 99999, 1], "<i4").tobytes(),))
    _fresh_process(monkeypatch)
    again = _index(FILES, tmp_path)
    _same(again, _index(FILES, None))
    assert "damaged row" in caplog.text
    _fresh_process(monkeypatch)
    _same(_index(FILES, tmp_path), again)  # stored afresh


def test_a_damaged_file_is_moved_aside_and_refilled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_process(monkeypatch)
    _index(FILES, tmp_path)
    (tmp_path / "terms" / "terms.sqlite").write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (tmp_path / "terms" / f"terms.sqlite{suffix}").unlink(missing_ok=True)
    _fresh_process(monkeypatch)
    _same(_index(FILES, tmp_path), _index(FILES, None))


def test_two_stores_on_one_file_agree_on_new_terms(tmp_path: Path) -> None:
    a, b = TermStore.in_dir(tmp_path), TermStore.in_dir(tmp_path)
    a.add_terms(["alpha", "beta"])
    b.add_terms(["beta", "gamma"])  # beta: a's id; gamma: the next one
    a.add_terms(["gamma", "delta"])
    assert a.ids["beta"] == b.ids["beta"] and a.ids["gamma"] == b.ids["gamma"]
    b.refresh()
    assert a.ids == b.ids and a.words == b.words
    assert len(set(a.ids.values())) == 4


def test_blocks_round_trip_and_refuse_what_they_did_not_write() -> None:
    # texts [3, 1, 3], [], [2]
    block = Block(*(np.array(x, dtype=np.int32) for x in ([2, 0, 1], [3, 1, 2], [2, 1, 1])))
    back = decode_block(encode_block(block), n_terms=4)
    assert [a.tolist() for a in back] == [a.tolist() for a in block]
    for bad in (b"abc", np.array([2, 1], "<i4").tobytes(), encode_block(block)[:-4]):
        with pytest.raises(ValueError):
            decode_block(bad, n_terms=4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        decode_block(encode_block(block), n_terms=3)

"""ripgrep's output is reused across chunkings of one unchanged tree and never after
an edit (docs/sweeps.md#shared-work)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.contracts.chunker import chunk_tree
from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.prepare import make_chunker
from retrieval_bench.retrieval import exact as exact_module
from retrieval_bench.retrieval.exact import ExactRetriever
from retrieval_bench.retrieval.rg_memo import RG_MEMO
from retrieval_bench.store import sqlite_cache


def _corpus(root: Path, budget: int) -> Corpus:
    chunker = make_chunker("ast", budget=budget)
    return Corpus(root, list(chunk_tree(root, chunker)), chunker.tokenizer_name)


def test_one_search_per_tree_across_chunkings_and_again_after_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RG_MEMO.clear()
    (tmp_path / "auth.py").write_text("def verify_token(token):\n    return token\n" * 20)
    calls: list[object] = []
    real = exact_module.subprocess.run

    def counted(*args: object, **kw: object) -> object:
        calls.append(args)
        return real(*args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(exact_module.subprocess, "run", counted)
    runs = []
    for budget in (32, 512):
        retriever = ExactRetriever(terms="identifiers")
        retriever.index(_corpus(tmp_path, budget))
        runs.append(retriever.search({"q": "where is verify_token?"}, 5))
    assert len(calls) == 1  # the second chunking reused the search
    assert {c.split(":")[0] for c in runs[0].scores["q"]} == {"auth.py"}
    assert runs[0].scores["q"] != runs[1].scores["q"]  # mapped to each chunking's chunks

    (tmp_path / "auth.py").write_text("def other():\n    pass\n")
    later = os.stat(tmp_path / "auth.py").st_mtime_ns + 10**9
    os.utime(tmp_path / "auth.py", ns=(later, later))
    retriever = ExactRetriever(terms="identifiers")
    retriever.index(_corpus(tmp_path, 512))
    assert retriever.search({"q": "where is verify_token?"}, 5).scores["q"] == {}
    assert len(calls) == 2  # the edited tree was searched again

    monkeypatch.setenv("RBENCH_CHUNK_CACHE", "0")
    retriever.search({"q": "where is verify_token?"}, 5)
    assert len(calls) == 3  # off: every search runs ripgrep


def test_a_later_process_reads_the_matches_from_the_workspace_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm re-run finds each search's decoded matches in ``rg.sqlite`` and gives the
    same run without ripgrep; a damaged row is searched again."""
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    tree.mkdir()
    (tree / "auth.py").write_text("def verify_token(token):\n    return token\n" * 20)
    (tree / "ünïcode.py").write_text("# verify_token here too\n")
    question = {"q": "where is verify_token? see auth.py"}

    def search() -> dict[str, float]:
        corpus = _corpus(tree, 64)
        corpus.cache_dir = cache
        retriever = ExactRetriever(terms="issue")
        retriever.index(corpus)
        return retriever.search(question, 10).scores["q"]

    RG_MEMO.clear()
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})
    first = search()
    assert "auth.py" in {c.split(":")[0] for c in first}
    RG_MEMO.clear()
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})  # a new process

    def no_rg(*args: object, **kw: object) -> object:
        raise AssertionError("ripgrep ran")

    monkeypatch.setattr(exact_module.subprocess, "run", no_rg)
    assert search() == first
    with sqlite3.connect(cache / "rg.sqlite") as conn:
        conn.execute("UPDATE searches SET rows = '[[1'")
    RG_MEMO.clear()
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})
    monkeypatch.undo()
    assert search() == first


def test_matches_round_trip_by_column_and_a_damaged_row_is_refused() -> None:
    from retrieval_bench.retrieval.rg_memo import _decode, _encode
    from retrieval_bench.store.sqlite_cache import DamagedRowError

    matches = [
        ("a.py", 3, "x = ünï", ("x", "ünï")),
        ("b/c.py", 1, "", ()),
        ("a.py", 9, "y", ("y",)),
    ]
    assert _decode(_encode(matches)) == matches
    assert _decode(_encode([])) == []
    good = '{"paths":["a.py"],"p":[0],"n":[3],"t":["x"],"s":[["x"]]}'
    assert _decode(good) == [("a.py", 3, "x", ("x",))]
    for bad in (
        "[[1", "[]", '{"paths":["a.py"]}',
        good.replace('"p":[0]', '"p":[1]'), good.replace('"p":[0]', '"p":[-1]'),
        good.replace('"n":[3]', '"n":[true]'), good.replace('"n":[3]', '"n":[3,4]'),
        good.replace('"t":["x"]', '"t":[7]'), good.replace('"s":[["x"]]', '"s":[[1]]'),
        good.replace('"paths":["a.py"]', '"paths":[null]'),
    ):  # fmt: skip
        with pytest.raises(DamagedRowError):
            _decode(bad)

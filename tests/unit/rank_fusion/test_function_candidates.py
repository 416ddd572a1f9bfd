"""A file's function-ranker candidates outlive the process (docs/stages.md#function-ranker):
read back equal to a fresh read, per path, and read again after damage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.rank_fusion import function_candidates
from retrieval_bench.rank_fusion.function_candidates import (
    Candidate,
    flush_candidates,
    read_candidates,
    stored_candidates,
)
from retrieval_bench.store import sqlite_cache

TEXT = '''import os
from retrieval_bench.store import sqlite_cache


class Cart:
    """A cart."""

    def add(self, item):
        return self.total(item) + os.sep

    @property
    def total(self, x=None):
        return sum(self.items)


async def checkout(cart: Cart) -> None:
    cart.add(1)
'''


def _fields(cands: tuple[Candidate, ...] | list[Candidate]) -> list[tuple[object, ...]]:
    return [
        (c.entity, c.path, c.name, c.kind, c.start, c.lines, c.file_lines, dict(c.tf), c.length,
         c.calls)
        for c in cands
    ]  # fmt: skip


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})


def test_a_later_process_reads_the_candidates_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _new_process(monkeypatch)
    fresh = read_candidates("shop/cart.py", TEXT)
    assert {c.name for c in fresh} == {"Cart", "Cart.add", "Cart.total", "checkout"}
    assert _fields(stored_candidates("shop/cart.py", TEXT, tmp_path)) == _fields(fresh)
    flush_candidates(tmp_path)
    _new_process(monkeypatch)

    def no_read(*args: object, **kw: object) -> object:
        raise AssertionError("read again")

    with monkeypatch.context() as m:
        m.setattr(function_candidates, "read_candidates", no_read)
        assert _fields(stored_candidates("shop/cart.py", TEXT, tmp_path)) == _fields(fresh)
    other = stored_candidates("shop/other.py", TEXT, tmp_path)  # the path is in the key
    assert _fields(other) == _fields(read_candidates("shop/other.py", TEXT))


def test_a_damaged_row_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _new_process(monkeypatch)
    stored_candidates("shop/cart.py", TEXT, tmp_path)
    flush_candidates(tmp_path)
    with sqlite3.connect(tmp_path / "candidates.sqlite") as conn:
        conn.execute("UPDATE cands SET rows = '[[\"x\", 1]]'")
    _new_process(monkeypatch)
    again = stored_candidates("shop/cart.py", TEXT, tmp_path)
    assert _fields(again) == _fields(read_candidates("shop/cart.py", TEXT))
    assert "damaged row" in caplog.text

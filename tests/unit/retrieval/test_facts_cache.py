"""A damaged row of the code-graph facts cache is derived data: dropped with one
warning and computed again, never a ``KeyError`` that leaves the cache broken
(retrieval_bench/retrieval/facts_cache.py, docs/architecture.md#caches)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.retrieval import code_facts
from retrieval_bench.retrieval.code_facts import parse_facts
from retrieval_bench.retrieval.facts_cache import CACHE_FILE, FactsCache, decode_facts

SOURCE = "import os\nfrom .a import b as c\n\ndef f():\n    return os.path.join(c.x)\n"


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the in-process memo, as a new process would."""
    monkeypatch.setattr(code_facts, "_FACTS", type(code_facts._FACTS)())


def _rows(folder: Path) -> list[str]:
    with sqlite3.connect(folder / CACHE_FILE) as conn:
        return [r for (r,) in conn.execute("SELECT facts FROM facts")]


def _damage(folder: Path, text: str) -> None:
    conn = sqlite3.connect(folder / CACHE_FILE)
    with conn:
        conn.execute("UPDATE facts SET facts = ?", (text,))
    conn.close()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    ("damaged", "reason"),
    [
        ('{"i":[],"u":[],"a":[]}', "missing key(s) 'd'"),
        ('{"d":[],"i":[[0,"os"]],"u":[],"a":[]}', "an import is not [level, module, name, alias]"),
        ('{"d":[1],"i":[],"u":[],"a":[]}', "'d' is not a list of strings"),
        ("[1, 2]", "not an object but list"),
        ('{"d": [', "not JSON: Expecting value: line 1 column 8 (char 7)"),
    ],
)
def test_a_damaged_row_is_dropped_with_one_warning_and_recomputed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    damaged: str,
    reason: str,
) -> None:
    expected = parse_facts(SOURCE)
    _fresh_process(monkeypatch)
    cache = FactsCache(tmp_path / CACHE_FILE)
    assert code_facts.cached_facts(SOURCE, cache) == expected
    cache.close()
    (good,) = _rows(tmp_path)
    _damage(tmp_path, damaged)

    for _ in range(2):  # the damage is seen once: the row is then rewritten
        _fresh_process(monkeypatch)
        cache = FactsCache(tmp_path / CACHE_FILE)
        assert code_facts.cached_facts(SOURCE, cache) == expected
        cache.close()
        assert _rows(tmp_path) == [good]
    assert _warnings(caplog) == [
        f"code-graph facts cache {tmp_path / CACHE_FILE} had a damaged row ({reason}); "
        "dropped it; recomputing"
    ]


def test_many_damaged_rows_warn_once_per_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sources = [f"def f{i}():\n    return {i}\n" for i in range(5)]
    _fresh_process(monkeypatch)
    cache = FactsCache(tmp_path / CACHE_FILE)
    for source in sources:
        code_facts.cached_facts(source, cache)
    cache.close()
    _damage(tmp_path, '{"d": 1}')
    _fresh_process(monkeypatch)
    cache = FactsCache(tmp_path / CACHE_FILE)
    assert [code_facts.cached_facts(s, cache) for s in sources] == list(map(parse_facts, sources))
    cache.close()
    assert len(_warnings(caplog)) == 1
    assert all(decode_facts(row) is not None for row in _rows(tmp_path))

"""A damaged LLM response cache is moved aside with one warning and rebuilt."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from retrieval_bench.llm.cache import ResponseCache


def test_damaged_response_cache_is_moved_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "llm_cache.sqlite"
    cache = ResponseCache(path)
    for i in range(500):
        cache.put(f"k{i}", "m", {"prompt": i}, {"text": "x" * 200})
        cache.log_call(f"k{i}", "m", 0.1)
    del cache  # thread-local connections close with it
    with path.open("r+b") as fh:
        fh.truncate(4096)

    cache = ResponseCache(path)
    assert cache.get("k1") is None  # a miss, not "database disk image is malformed"
    cache.put("k1", "m", {"prompt": 1}, {"text": "again"})
    assert cache.get("k1") == {"text": "again"} and cache.count() == 1
    (moved,) = tmp_path.glob("llm_cache.sqlite.corrupt-*[0-9TZ]")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"LLM response cache {path} was corrupt (database disk image is malformed); "
        f"moved to {moved}; rebuilding"
    ]


def test_a_file_that_is_not_a_database_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "llm_cache.sqlite"
    path.write_bytes(b"\x00garbage" * 512)
    cache = ResponseCache(path)
    assert cache.count() == 0 and cache.call_count() == 0
    assert len(list(tmp_path.glob("llm_cache.sqlite.corrupt-*"))) == 1

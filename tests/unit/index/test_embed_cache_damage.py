"""A damaged embedding cache is moved aside with one warning and rebuilt: it is only a cache."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.index.embed import EmbeddingCache

HASHES = [f"{i:064x}" for i in range(2000)]


def _filled(path: Path) -> np.ndarray:
    vectors = np.random.default_rng(0).random((len(HASHES), 32), dtype=np.float32)
    with EmbeddingCache(path) as cache:
        cache.put_many("m", HASHES, vectors)
    return vectors


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _truncate(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.truncate(4096)  # the schema page survives: the damage shows on the first read


def _overwrite(path: Path) -> None:
    path.write_bytes(b"garbage!" * 1000)  # the damage shows when opening


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(_truncate, "database disk image is malformed"), (_overwrite, "file is not a database")],
    ids=["truncated", "overwritten"],
)
def test_damaged_cache_is_moved_aside_and_rebuilt(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], None],
    reason: str,
) -> None:
    path = tmp_path / "embeddings.sqlite"
    vectors = _filled(path)
    damage(path)
    with EmbeddingCache(path) as cache:
        assert cache.get_many("m", HASHES[:10]) == {}  # gone, not an exception
        cache.put_many("m", HASHES[:3], vectors[:3])
        assert cache.count("m") == 3
    (moved,) = tmp_path.glob("embeddings.sqlite.corrupt-*[0-9TZ]")
    assert _warnings(caplog) == [
        f"embedding cache {path} was corrupt ({reason}); moved to {moved}; rebuilding"
    ]
    with EmbeddingCache(path) as again:  # the new file is healthy
        assert np.array_equal(again.get_many("m", HASHES[:1])[HASHES[0]], vectors[0])
    assert len(_warnings(caplog)) == 1


def test_two_open_caches_move_the_damaged_file_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The index build and the dense retriever each hold a connection: the second to
    notice must not move the first one's fresh file aside."""
    path = tmp_path / "embeddings.sqlite"
    vectors = _filled(path)
    _truncate(path)
    first, second = EmbeddingCache(path), EmbeddingCache(path)
    assert first.get_many("m", HASHES) == {}
    first.put_many("m", HASHES[:5], vectors[:5])
    assert len(second.get_many("m", HASHES)) == 5  # reconnected to the new file
    first.close()
    second.close()
    assert len(list(tmp_path.glob("embeddings.sqlite.corrupt-*[0-9TZ]"))) == 1
    assert len(_warnings(caplog)) == 1

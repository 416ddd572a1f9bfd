"""Corpus lookups: the chunks at a line, most specific first."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Chunk


def _chunk(i: int, path: str, start: int, end: int) -> Chunk:
    return Chunk(f"c{i:03d}", path, start, end, "python", "window", None, "x")


def _brute(chunks: list[Chunk], path: str, line: int) -> list[Chunk]:
    mine = sorted((c for c in chunks if c.path == path), key=lambda c: (c.start_line, c.end_line))
    hits = [c for c in mine if c.start_line <= line <= c.end_line]
    return sorted(hits, key=lambda c: (c.end_line - c.start_line, c.start_line))


spans = st.lists(
    st.tuples(st.sampled_from(["a.py", "b.py"]), st.integers(1, 60), st.integers(0, 40)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(spans)
def test_chunks_at_equals_a_scan_of_every_chunk(found: list[tuple[str, int, int]]) -> None:
    """Nested (a collapsed class over its methods), overlapping and repeated spans;
    ``chunk_at`` (a line table) gives the first of them."""
    chunks = [_chunk(i, p, s, s + n) for i, (p, s, n) in enumerate(found)]
    corpus = Corpus(Path("."), chunks)
    for path in ("a.py", "b.py", "c.py"):
        for line in range(0, 105):
            expected = _brute(chunks, path, line)
            assert corpus.chunks_at(path, line) == expected
            assert corpus.chunk_at(path, line) is (expected[0] if expected else None)


def test_a_collapsed_class_is_found_after_its_methods() -> None:
    chunks = [_chunk(0, "a.py", 1, 100), _chunk(1, "a.py", 2, 10), _chunk(2, "a.py", 50, 60)]
    corpus = Corpus(Path("."), chunks)
    assert [c.id for c in corpus.chunks_at("a.py", 55)] == ["c002", "c000"]
    assert [c.id for c in corpus.chunks_at("a.py", 70)] == ["c000"]
    assert corpus.chunks_at("a.py", 101) == []


def test_a_pickled_corpus_leaves_its_sources_and_derived_values_behind() -> None:
    import pickle

    from retrieval_bench.files import SourceFile

    chunk = _chunk(0, "a.py", 1, 2)
    corpus = Corpus(Path("."), [chunk], sources={"a.py": SourceFile("a.py", "x = 1\n", "0" * 64)})
    assert corpus.derived("k", lambda: 42) == 42
    restored = pickle.loads(pickle.dumps(corpus))
    assert restored.sources == {} and restored.chunks == [chunk]
    assert restored.derived("k", lambda: 7) == 7
    assert corpus.sources  # the original keeps them

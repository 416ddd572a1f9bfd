"""The ast chunker's memo of top-level definitions (docs/architecture.md#caches): a
changed file re-chunks only its changed definitions, and its chunks equal those
made afresh."""

from __future__ import annotations

import pytest

from retrieval_bench.chunking import ast as ast_chunker
from retrieval_bench.chunking import definition_memo
from retrieval_bench.files import SourceFile
from retrieval_bench.harness.run.prepare import make_chunker


def _big_class(name: str, n: int, body: str = "return self.value + {i}") -> str:
    methods = "".join(
        f"    def method_{i}(self, value):\n        '''Doc {i}.'''\n        {body.format(i=i)}\n\n"
        for i in range(n)
    )
    return f"class {name}:\n{methods}"


BEFORE = (
    "import os\n\n# the first class\n@decorated\n"
    + _big_class("First", 40)
    + "\nCONSTANT = os.sep\n\n"
    + _big_class("Second", 40)
)
AFTER = BEFORE.replace("Doc 7.", "Doc seven.", 1).replace(
    "CONSTANT = os.sep\n", "CONSTANT = os.sep\nOTHER = 1\n\n\n"
)


@pytest.fixture
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(definition_memo, "_DEFINITIONS", {})


def _chunks(text: str, path: str = "pkg/mod.py") -> list:  # type: ignore[type-arg]
    return make_chunker("ast", budget=128).chunk_file(SourceFile(path, text, "0" * 64))


def test_memo_chunks_equal_fresh_ones_and_skip_unchanged_definitions(
    fresh_memo: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = ast_chunker._FileRun._definition

    def counting(self, d, first, last, *rest):  # type: ignore[no-untyped-def]
        if not rest[-1]:  # depth 0: a top-level definition
            calls.append(first)
        return real(self, d, first, last, *rest)

    monkeypatch.setattr(ast_chunker._FileRun, "_definition", counting)
    _chunks(BEFORE)
    assert len(calls) == 2
    calls.clear()
    with_memo = _chunks(AFTER, "other/place.py")
    assert len(calls) == 1  # only First changed; Second moved down three rows
    monkeypatch.setenv("RBENCH_CHUNK_CACHE", "0")
    fresh = _chunks(AFTER, "other/place.py")
    assert with_memo == fresh
    assert len(fresh) > 10
    second = [c for c in fresh if c.symbol and c.symbol.startswith("Second")]
    assert second and all(c.path == "other/place.py" for c in second)


def test_a_file_with_a_syntax_error_is_chunked_afresh(fresh_memo: None) -> None:
    broken = BEFORE + "\ndef broken(:\n    pass\n"
    _chunks(broken)
    assert all(not table for table in definition_memo._DEFINITIONS.values())

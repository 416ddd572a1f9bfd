"""The chunkers' fast paths give exactly what the plain ones give (docs/stages.md#ast,
docs/stages.md#tokenizers): ``count_lines`` equals ``count_batch`` line by line, the
``ast`` chunker's keyword-pruned search for definitions finds what the full walk finds,
and a collapsed outline reuses a file's rows only when its text encodes losslessly."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.chunking import ast as ast_module
from retrieval_bench.chunking.text import split_lines
from retrieval_bench.chunking.tokenizer import (
    REGEX_CODE,
    WORDPIECE,
    WordPieceTokenizer,
    get_tokenizer,
)
from retrieval_bench.files import iter_source_files
from retrieval_bench.types import Chunk
from tests.unit.chunking.helpers import ast_chunks
from tests.unit.chunking.samples import ALL

ROOT = Path(__file__).resolve().parents[3]

TRICKY_LINES = [
    "",
    " ",
    "\t \t",
    "\r",
    "x = 1\r",
    "a\x0cb",  # form feed: dropped by the normaliser, so "ab" is one word
    "a\x0bb",
    "a\x00b",
    "\x1c\x1d\x1e\x1f",
    "a\x7fb",
    "zero\u200bwidth",
    "\ufeffbom",
    "café naïve résumé",
    "e\u0301 accents",
    "中文字符 mixed with ascii_words",
    "emoji 😀 here",
    "İstanbul ǅ ﬁ",
    "\xa0nbsp\u3000ideographic space",
    "sep\u2028line\u2029para\x85next",
    "a" * 99,
    "a" * 100,
    "a" * 101,  # longer than a WordPiece word: one [UNK]
    "x9" * 60,
    "internationalization_deserialization(x) -> None:",
    "[CLS] x [SEP] y [MASK]z a[UNK]b [PAD]",  # added tokens, matched in the raw text
    "[cls] [Sep] [unused0] [ MASK ]",
    "    def f(self, x: int = 0) -> dict[str, 'A']:  # a comment ~!@#$%^&*`|\\\\",
    "##hash ## ###",
    "0x1F 1e-9 3.14 1_000_000",
    "\t\treturn {'k': [1, 2, (3,)]}",
]


@pytest.mark.parametrize("name", [WORDPIECE, REGEX_CODE])
def test_count_lines_equals_count_batch_on_tricky_lines(name: str) -> None:
    tok = get_tokenizer(name)
    expected = tok.count_batch(TRICKY_LINES)
    assert tok.count_lines(TRICKY_LINES) == expected
    assert tok.count_lines(TRICKY_LINES[::-1]) == expected[::-1]
    assert [tok.count_lines([line]) for line in TRICKY_LINES] == [[n] for n in expected]
    assert tok.count_lines([]) == []
    # a text holding a newline is not a line: counted as a whole all the same
    texts = ["a b\nc", "d"]
    assert tok.count_lines(texts) == tok.count_batch(texts)


def test_count_lines_on_a_fresh_tokenizer_and_real_lines() -> None:
    """No word seen before (a new tokenizer's memo), then seen: the same counts."""
    tok = WordPieceTokenizer()
    lines = [line for text in ALL.values() for line in split_lines(text)]
    for path in sorted((ROOT / "retrieval_bench" / "chunking").glob("*.py")):
        lines += split_lines(path.read_text())
    expected = tok.count_batch(lines)
    assert tok.count_lines(lines) == expected  # every word new
    assert tok.count_lines(lines) == expected  # every word remembered
    assert sum(expected) > 10_000


def _chunks_both_ways(
    monkeypatch: pytest.MonkeyPatch, files: list[tuple[str, str]], budget: int
) -> tuple[list[list[Chunk]], list[list[Chunk]]]:
    monkeypatch.setattr(ast_module, "definition_memo", lambda *_: None)  # chunk afresh
    fast = [ast_chunks(path, text, budget) for path, text in files]
    with monkeypatch.context() as m:
        m.setattr(ast_module, "_DEFINITION_KEYWORDS", {})  # the full walk, nothing skipped
        full = [ast_chunks(path, text, budget) for path, text in files]
    return fast, full


def _repository_files() -> list[tuple[str, str]]:
    files = [(f.path, f.text) for f in iter_source_files(ROOT / "retrieval_bench")]
    files += [(f.path, f.text) for f in iter_source_files(ROOT / "tests" / "unit" / "chunking")]
    return [(path, text) for path, text in files if path.endswith(".py")]


@pytest.mark.parametrize("budget", [48, 512])
def test_pruned_search_finds_what_the_full_walk_finds(
    monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    files = list(ALL.items()) + _repository_files()
    # nested definitions inside statements, and keywords that only look like one
    files.append(
        (
            "nested.py",
            "def outer(x):\n"
            + "".join(f"    value_{i} = x * {i}  # default, classes\n" for i in range(5))
            + "    if x:\n        try:\n            def inner(y):\n"
            + "".join(f"                y += {i}\n" for i in range(80))
            + "                return y\n        except ValueError:\n            pass\n"
            + "    with open(x) as f:\n        class Local:\n            '''Doc.'''\n"
            + "".join(f"            field_{i} = {i}\n" for i in range(80))
            + "    return [lambda: inner for _ in range(3)]\n",
        )
    )
    fast, full = _chunks_both_ways(monkeypatch, files, budget)
    assert sum(map(len, fast)) > len(files)
    assert fast == full
    assert any(c.symbol == "outer.inner" for c in fast[-1])


def test_collapsed_outline_keeps_the_old_text_of_unencodable_rows() -> None:
    """A lone surrogate cannot be encoded: the bytes tree-sitter sees hold ``?`` for
    it, and a collapsed outline shows those bytes, as the whole-row path did. (The
    WordPiece tokenizer refuses such text: counted with the regex one.)"""
    methods = "".join(
        f"    def method_{i}(self, item):\n"
        + "".join(f"        item = item.step({j}, 'label {j}')\n" for j in range(12))
        + "        return item\n\n"
        for i in range(6)
    )
    text = f'class Big:\n    MARK = "\ud800"\n\n{methods}'
    chunks = ast_chunks("big.py", text, 64, tokenizer=REGEX_CODE)
    outline = [c for c in chunks if c.kind == "collapsed"]
    assert outline and 'MARK = "?"' in outline[0].text
    clean = ast_chunks("big.py", text.replace("\ud800", "é"), 64, tokenizer=REGEX_CODE)
    assert 'MARK = "é"' in [c for c in clean if c.kind == "collapsed"][0].text

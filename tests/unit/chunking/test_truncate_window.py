"""The naive and basic chunking rungs: ``truncate`` and ``window`` (docs/stages.md#chunkers)."""

from __future__ import annotations

import pytest

from retrieval_bench.chunking.tokenizer import REGEX_CODE, WORDPIECE, get_tokenizer
from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from tests.unit.chunking.helpers import check_invariants, source
from tests.unit.chunking.samples import ALL

# Ten lines of four regex tokens each: token k sits on line k // 4 + 1.
GRID = "".join(f"a{i} b{i} c{i} d{i}\n" for i in range(1, 11))


def chunk(name: str, text: str, path: str = "f.txt", **params: object):
    return registry.create("chunkers", name, **params).chunk_file(source(path, text))


def test_registry_knows_the_three_chunkers() -> None:
    assert {"truncate", "window", "ast"} <= set(registry.names("chunkers"))


def test_truncate_keeps_a_short_file_whole() -> None:
    (c,) = chunk("truncate", ALL["pkg/index.py"], "pkg/index.py")
    assert c.text == ALL["pkg/index.py"]
    assert (c.kind, c.start_line, c.end_line, c.language) == ("file", 1, 30, "python")
    check_invariants(c.text, [c], 512)


def test_truncate_cuts_after_m_tokens_with_the_right_end_line() -> None:
    (c,) = chunk("truncate", GRID, max_tokens=10, tokenizer=REGEX_CODE)
    assert c.text == "a1 b1 c1 d1\na2 b2 c2 d2\na3 b3"
    assert (c.start_line, c.end_line, c.n_tokens, c.kind) == (1, 3, 10, "file")
    (c,) = chunk("truncate", GRID, max_tokens=8, tokenizer=REGEX_CODE)
    assert (c.end_line, c.text.endswith("d2")) == (2, True)


def test_truncate_does_not_cut_inside_a_word() -> None:
    text = "alpha internationalization omega"
    (c,) = chunk("truncate", text, max_tokens=2)  # the long word is 2 pieces
    assert c.text == "alpha"
    assert c.n_tokens == get_tokenizer(WORDPIECE).count("alpha")


def test_truncate_config_and_empty_file() -> None:
    chunker = registry.create("chunkers", "truncate", max_tokens=64)
    assert chunker.config() == {"max_tokens": 64, "tokenizer": WORDPIECE}
    assert (chunker.name, chunker.tokenizer_name) == ("truncate", WORDPIECE)
    assert chunker.chunk_file(source("e.py", "\n  \n")) == []


def test_token_windows_line_math() -> None:
    chunks = chunk("window", GRID, size=6, tokenizer=REGEX_CODE)
    got = [(c.start_line, c.end_line, c.text, c.n_tokens) for c in chunks]
    assert got[:3] == [
        (1, 2, "a1 b1 c1 d1\na2 b2", 6),
        (2, 3, "c2 d2\na3 b3 c3 d3", 6),
        (4, 5, "a4 b4 c4 d4\na5 b5", 6),
    ]
    assert len(chunks) == 7 and chunks[-1].end_line == 10
    assert all(c.kind == "window" and c.symbol is None for c in chunks)


def test_token_windows_overlap() -> None:
    chunks = chunk("window", GRID, size=8, overlap=4, tokenizer=REGEX_CODE)
    # each window starts one line (4 tokens) after the previous one
    assert [(c.start_line, c.end_line) for c in chunks] == [(i, i + 1) for i in range(1, 10)]
    assert chunks[1].text == "a2 b2 c2 d2\na3 b3 c3 d3"


def test_token_windows_keep_indentation_and_exact_counts() -> None:
    text = ALL["src/lib.rs"]
    chunks = chunk("window", text, "src/lib.rs", size=40)
    assert chunks[0].text.startswith("//! Crate docs.")
    indented = [c for c in chunks if c.text.startswith(" ")]
    assert indented, "a window starting a line keeps its indentation"
    check_invariants(text, chunks, 40)
    assert {c.language for c in chunks} == {"rust"}


def test_line_windows() -> None:
    chunks = chunk("window", GRID, unit="lines", size=4, overlap=1)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (4, 7), (7, 10)]
    assert chunks[1].text == "a4 b4 c4 d4\na5 b5 c5 d5\na6 b6 c6 d6\na7 b7 c7 d7"
    blank_gap = "x\n" + "\n" * 6 + "y\n"
    chunks = chunk("window", blank_gap, unit="lines", size=3)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (7, 8)]


def test_window_defaults_and_config() -> None:
    assert registry.create("chunkers", "window").config() == {
        "size": 256,
        "overlap": 0,
        "unit": "tokens",
        "tokenizer": WORDPIECE,
    }
    assert registry.create("chunkers", "window", unit="lines").size == 50


@pytest.mark.parametrize(
    "params", [{"unit": "pages"}, {"size": 0}, {"size": 4, "overlap": 4}, {"overlap": -1}]
)
def test_window_rejects_bad_parameters(params: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        registry.create("chunkers", "window", **params)


def test_unknown_parameter_names_itself() -> None:
    with pytest.raises(ConfigError, match="budget"):
        registry.create("chunkers", "window", budget=3)

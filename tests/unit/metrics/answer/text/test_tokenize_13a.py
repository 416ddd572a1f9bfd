"""The mteval-v13a tokenizer, rule by rule (expected tokens worked out from the rules)."""

from __future__ import annotations

import pytest

from retrieval_bench.metrics.answer.text.tokenize_13a import tokenize_13a


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        # rule 4: ASCII punctuation other than . , ' - is split off
        ('f(x)="y";', ["f", "(", "x", ")", "=", '"', "y", '"', ";"]),
        ("a/b@c#d", ["a", "/", "b", "@", "c", "#", "d"]),
        # apostrophe and hyphen between letters stay inside the word
        ("it's well-known", ["it's", "well-known"]),
        # rule 5/6: period and comma split unless between digits
        ("Hello, world.", ["Hello", ",", "world", "."]),
        ("1,000.50 and 3.14", ["1,000.50", "and", "3.14"]),
        ("v2.0, ok", ["v2.0", ",", "ok"]),
        ("end 7.", ["end", "7", "."]),  # "7." - the period precedes a space (non-digit)
        (".5 start", [".", "5", "start"]),  # padded with a space, so the "." follows a non-digit
        # a pair is rewritten once: in "x.,5" the comma keeps its digit
        ("x.,5", ["x", ".", ",5"]),
        ("wait...", ["wait", ".", ".", "."]),
        # rule 7: hyphen after a digit
        ("2023-2024 a-1", ["2023", "-", "2024", "a-1"]),
        # rules 1-2: <skipped>, end-of-line hyphenation, newlines, SGML entities
        ("one <skipped> two", ["one", "two"]),
        ("hyphen-\nated\nnext", ["hyphenated", "next"]),
        ("&quot;q&quot; &amp; &lt;b&gt; &amp;lt;", ['"', "q", '"', "&", "<", "b", ">", "<"]),
        # non-ASCII characters are never split off
        ("Zürich—«Genf»", ["Zürich—«Genf»"]),
        # case is kept
        ("ABC def", ["ABC", "def"]),
        ("", []),
        (" \t ", []),
    ],
)
def test_rules(line: str, tokens: list[str]) -> None:
    assert tokenize_13a(line) == tokens

"""The code-aware tokenizer: identifier splitting, stopwords, digits, speed-related cache."""

from __future__ import annotations

import doctest

import pytest

from retrieval_bench.retrieval import code_tokens
from retrieval_bench.retrieval.code_tokens import (
    DEFAULT_STOPWORDS,
    CodeTokenizer,
    path_tokens,
    tokenize,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("parseJsonLine", ["parsejsonline", "parse", "json", "line"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("XMLHttpRequest", ["xmlhttprequest", "xml", "http", "request"]),
        ("IOError", ["ioerror", "io", "error"]),
        ("parse_json_line", ["parse_json_line", "parse", "json", "line"]),
        ("MAX_RETRY_COUNT", ["max_retry_count", "max", "retry", "count"]),
        ("__init__", ["init"]),
        ("_private_helper", ["private_helper", "private", "helper"]),
        ("getHTTP2Response", ["gethttp2response", "get", "http", "response"]),
        ("simple", ["simple"]),
        ("ABC", ["abc"]),
        ("os.path.join(a, b)", ["os", "path", "join"]),
        ("user-profile/page.tsx", ["user", "profile", "page", "tsx"]),
        ("größe_berechnen", ["größe_berechnen", "größe", "berechnen"]),
        ("", []),
        ("  \n\t ;;; ", []),
    ],
)
def test_identifier_splitting(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_text_order_and_repeats_are_kept() -> None:
    assert tokenize("load(x); loadConfig(); load()") == [
        "load",
        "loadconfig",
        "load",
        "config",
        "load",
    ]


def test_stopwords_and_single_letters_dropped() -> None:
    toks = tokenize("def get(self, a, i): return the value of x if it is None")
    assert toks == ["get", "value"]
    assert {"self", "def", "return", "the", "none"} <= DEFAULT_STOPWORDS


def test_stopwords_configurable() -> None:
    keep_all = CodeTokenizer(stopwords=())
    assert keep_all("def self") == ["def", "self"]
    custom = CodeTokenizer(stopwords=["Foo"])
    assert custom("foo bar FOO") == ["bar"]


def test_stopword_part_keeps_whole_identifier() -> None:
    assert tokenize("is_valid") == ["is_valid", "valid"]


def test_min_len() -> None:
    assert CodeTokenizer(min_len=1)("x_y") == ["x_y", "x", "y"]
    assert CodeTokenizer(min_len=4)("readFile io") == ["readfile", "read", "file"]


def test_keep_identifier_off() -> None:
    assert CodeTokenizer(keep_identifier=False)("parseJsonLine") == ["parse", "json", "line"]


@pytest.mark.parametrize(
    ("mode", "text", "expected"),
    [
        ("keep", "http2 404 sha256sum", ["http2", "http", "404", "sha256sum", "sha", "256", "sum"]),
        ("drop", "http2 404 sha256sum", ["http2", "http", "sha256sum", "sha", "sum"]),
        (
            "attach",
            "http2 404 sha256sum Int64Value",
            ["http2", "404", "sha256sum", "sha256", "sum", "int64value", "int64", "value"],
        ),
    ],
)
def test_digits_modes(mode: str, text: str, expected: list[str]) -> None:
    assert CodeTokenizer(digits=mode)(text) == expected  # type: ignore[arg-type]


def test_bad_options_rejected() -> None:
    with pytest.raises(ValueError, match="digits"):
        CodeTokenizer(digits="split")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_len"):
        CodeTokenizer(min_len=0)


def test_cache_does_not_change_results() -> None:
    text = "class HTTPServer:\n    def handleRequest(self, raw_request): ...\n" * 3
    assert CodeTokenizer(cache_size=0)(text) == CodeTokenizer()(text)
    assert CodeTokenizer().tokenize_many([text, "x"]) == [tokenize(text), []]


@pytest.mark.parametrize(
    "tokenizer",
    [CodeTokenizer(), CodeTokenizer(keep_identifier=False, digits="attach"), CodeTokenizer([])],
)
def test_term_counts_are_the_counts_of_tokenize_in_first_occurrence_order(
    tokenizer: CodeTokenizer,
) -> None:
    text = (
        "def parseJsonLine(line_no, json_line):\n    # parse the JSON line\n"
        "    return json.loads(line) + parse_line(JSONLine, line_no2) + ünïcode_Näme\n"
        "foo_foo = fooFoo = FOO_foo = 42 ; x = y2k\n"
    )
    tokens = tokenizer.tokenize(text)
    counts: dict[str, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    got = tokenizer.term_counts(text)
    assert list(got.items()) == list(counts.items())
    assert tokenizer.term_counts("") == {}


def test_path_tokens_and_name() -> None:
    assert path_tokens("src/shopapi/http_client.py") == [
        "src",
        "shopapi",
        "http_client",
        "http",
        "client",
        "py",
    ]
    assert CodeTokenizer().name.startswith("code-tokens(")


def test_module_doctests() -> None:
    result = doctest.testmod(code_tokens)
    assert result.attempted >= 5 and result.failed == 0

"""Term extraction of the exact retriever's rungs (no ripgrep needed)."""

from __future__ import annotations

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.exact import ExactRetriever
from retrieval_bench.retrieval.query_terms import identifier_terms, raw_terms


def test_raw_terms_drop_stopwords_and_short_words() -> None:
    assert raw_terms("Where is the order total computed, and how is it rounded?") == [
        "order",
        "total",
        "computed",
        "rounded",
    ]
    assert raw_terms("Total total TOTAL") == ["Total"]
    assert raw_terms("is it ok?") == []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where is parse_json_line defined?", ["parse_json_line"]),
        ("How does HTTPServer call getUserName?", ["HTTPServer", "getUserName"]),
        (
            "Fix `Session.send()` retries in src/requests/adapters.py",
            ["Session.send", "send", "adapters.py", "adapters"],
        ),
        ("What does MAX_RETRIES do, e.g. in os.path.join", ["MAX_RETRIES", "os.path.join", "join"]),
        ("Where is __init__ of the DEBUG mode", ["__init__", "DEBUG"]),
        ("bump md5 in config.yaml and call load()", ["md5", "config.yaml", "config", "load"]),
        ("the `def foo` thing", ["def foo"]),
    ],
)
def test_identifier_terms(question: str, expected: list[str]) -> None:
    assert identifier_terms(question) == expected


def test_identifier_terms_fall_back_to_raw_words() -> None:
    q = "where do we compute the order total"
    assert identifier_terms(q) == raw_terms(q) == ["compute", "order", "total"]
    acronym_only = "Where do I add a new endpoint to the API?"
    assert identifier_terms(acronym_only) == ["add", "new", "endpoint", "API"]
    assert identifier_terms("Which API serves get_user?") == ["API", "get_user"]


def test_llm_rung_uses_the_keyword_provider() -> None:
    calls: list[str] = []

    def provider(question: str) -> list[str]:
        calls.append(question)
        return ["  charge ", "the", "x", "Charge", "refund_order"]

    ex = ExactRetriever(terms="llm", keyword_provider=provider)
    assert ex.extract_terms("how are refunds paid?") == ["charge", "refund_order"]
    assert calls == ["how are refunds paid?"]
    empty = ExactRetriever(terms="llm", keyword_provider=lambda q: [])
    assert empty.extract_terms("where is parse_json_line") == ["parse_json_line"]


def test_max_terms_caps_in_question_order() -> None:
    ex = ExactRetriever(terms="raw", max_terms=2)
    assert ex.extract_terms("alpha beta gamma delta") == ["alpha", "beta"]


def test_bad_configs() -> None:
    with pytest.raises(ConfigError, match="keyword_provider"):
        ExactRetriever(terms="llm")
    with pytest.raises(ConfigError, match="only used"):
        ExactRetriever(terms="raw", keyword_provider=lambda q: [q])
    with pytest.raises(ConfigError, match="not one of"):
        ExactRetriever(terms="regex")
    with pytest.raises(ConfigError, match="case"):
        ExactRetriever(case="upper")
    with pytest.raises(ConfigError, match="unknown parameter 'term'"):
        ExactRetriever(term="raw")
    with pytest.raises(ConfigError, match="max_terms: Input should be a valid integer"):
        ExactRetriever(max_terms="many")


def test_params_and_keywords() -> None:
    """Config parameters are ``Params``; the keyword provider, model and name are not."""
    params = ExactRetriever.Params(terms="raw", max_terms=2, line_bonus=0.1)
    ex = ExactRetriever(params, name="ee")
    assert (ex.params, ex.name, ex.terms, ex.max_terms, ex.line_bonus) == (
        params, "ee", "raw", 2, 0.1)  # fmt: skip
    assert ex.config() == ExactRetriever(terms="raw", max_terms=2, line_bonus=0.1).config()
    for keyword in ("keyword_provider", "llm", "name"):
        assert keyword not in ExactRetriever.Params.model_fields
    llm_params = ExactRetriever.Params(terms="llm")
    llm_rung = ExactRetriever(llm_params, keyword_provider=lambda q: ["refund"])
    assert llm_rung.extract_terms("anything") == ["refund"]

"""LLM-proposed keywords for the exact retriever (the "llm" rung, docs/stages.md#exact)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError, ToolMissingError
from retrieval_bench.llm.base import ChatRequest, LLMUnavailableError
from retrieval_bench.retrieval.exact import ExactRetriever, find_rg
from retrieval_bench.retrieval.keywords import LLMKeywordProvider, parse_keywords
from retrieval_bench.retrieval.query_terms import identifier_terms
from tests.fakes.llm import ScriptedLLM, last_user
from tests.unit.retrieval.conftest import window_corpus
from tests.unit.retrieval.test_hyde import BatchLLM


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("parse_json\nload_config\n", ["parse_json", "load_config"]),
        (
            "register_routes, Blueprint; ROUTE_MODULES",
            ["register_routes", "Blueprint", "ROUTE_MODULES"],
        ),
        (
            "Here are some keywords:\n1. `parse_json`\n2) **Router** - the router class\n"
            "- \"load_config\"\n* 'settings.py'\n• TOKEN_TTL",
            ["parse_json", "Router", "load_config", "settings.py", "TOKEN_TTL"],
        ),
        ("Keywords: checkout, cart_total", ["checkout", "cart_total"]),
        (
            "apply_discount: applies the bulk discount\nPricingEngine (class)",
            ["apply_discount", "PricingEngine"],
        ),
        (
            "```\nPricingEngine\napply_bulk_discounts\n```",
            ["PricingEngine", "apply_bulk_discounts"],
        ),
        ("parse_json\nPARSE_JSON\nParse_Json", ["parse_json"]),  # case-insensitive dedupe
        ("id\nto\nthe\nuse\nthe user profile\nFoo::bar", ["user profile", "Foo::bar"]),
        ("- `a` and `bulk_discount` in the pricing rules", ["bulk_discount"]),
        ("I would search the code base for the following names in the files", []),
        ("", []),
        ("the, of, a, is", []),
        ("Sorry, I cannot help with that request here.", []),
        ("Try grepping, for example, for `retry_policy` in the client code", ["retry_policy"]),
    ],
)
def test_parse_keywords(reply: str, expected: list[str]) -> None:
    assert parse_keywords(reply) == expected


def test_parse_keywords_caps_the_count() -> None:
    assert parse_keywords("alpha\nbeta\ngamma\ndelta", max_keywords=2) == ["alpha", "beta"]


def test_provider_asks_the_model_and_remembers() -> None:
    llm = ScriptedLLM("1. BULK_DISCOUNT_TIERS\n2. apply_bulk_discounts\n3. pricing")
    provider = LLMKeywordProvider(llm, max_keywords=2)
    question = "How is the discount for bulk orders computed?"
    assert provider(question) == ["BULK_DISCOUNT_TIERS", "apply_bulk_discounts"]
    assert provider(question) == ["BULK_DISCOUNT_TIERS", "apply_bulk_discounts"]
    assert len(llm.requests) == 1  # asked once per distinct question
    prompt = last_user(llm.requests[0])
    assert question in prompt and "up to 2 keywords" in prompt
    assert llm.requests[0].temperature == 0.0
    assert provider.artifacts[question]["fallback"] is None
    assert provider.artifacts[question]["reply"].startswith("1. BULK")
    assert provider.failures == {}
    assert provider("  ") == [] and len(llm.requests) == 1


def test_failed_call_falls_back_to_identifier_terms() -> None:
    provider = LLMKeywordProvider(ScriptedLLM(lambda r: LLMUnavailableError("down")))
    question = "Where is `parse_json_line` called from the CLI?"
    assert provider(question) == identifier_terms(question) == ["parse_json_line", "CLI"]
    assert provider.artifacts[question]["fallback"] == "identifiers"
    assert "LLMUnavailableError: down" in provider.failures[question]
    assert "identifier terms" in provider.failures[question]


def test_unparseable_reply_falls_back_and_is_recorded() -> None:
    provider = LLMKeywordProvider(ScriptedLLM("Sorry, I cannot help with that request here."))
    question = "What does HttpClient retry on?"
    assert provider(question) == ["HttpClient"]
    assert provider.failures[question].startswith("no keywords in the model's reply")


def test_prefetch_batches_new_questions() -> None:
    def script(req: ChatRequest) -> str:
        return "alpha_one" if "first" in last_user(req) else "beta_two"

    llm = BatchLLM(script)
    provider = LLMKeywordProvider(llm)
    provider.prefetch(["the first question", "the second question", "the first question", ""])
    assert llm.batches == [2]
    assert provider("the first question") == ["alpha_one"]
    assert provider("the second question") == ["beta_two"]
    provider.prefetch(["the first question"])
    assert llm.batches == [2] and len(llm.requests) == 2


def test_exact_builds_a_provider_from_an_llm() -> None:
    llm = ScriptedLLM("checkout_total\ncart")
    ex = registry.create("retrievers", "exact", terms="llm", llm=llm)
    assert isinstance(ex.keyword_provider, LLMKeywordProvider)
    assert ex.extract_terms("where do we add up the money?") == ["checkout_total", "cart"]
    # an explicit provider wins; other rungs ignore an injected llm
    ex2 = ExactRetriever(terms="llm", llm=llm, keyword_provider=lambda q: ["given"])
    assert ex2.extract_terms("x") == ["given"]
    assert ExactRetriever(terms="identifiers", llm=llm).keyword_provider is None
    with pytest.raises(ConfigError, match="needs an llm"):
        registry.create("retrievers", "exact", terms="llm")


@pytest.mark.integration
def test_exact_llm_rung_finds_code_the_question_does_not_name(tmp_path: Path) -> None:
    try:
        find_rg()
    except ToolMissingError:  # pragma: no cover - the venv ships rg
        pytest.skip("ripgrep is not installed")
    (tmp_path / "pricing.py").write_text("TIERS = [10, 25]\n\ndef apply_bulk_discounts(cart):\n")
    (tmp_path / "users.py").write_text("def load_user(uid):\n    return uid\n")
    ex = ExactRetriever(terms="llm", llm=ScriptedLLM("- apply_bulk_discounts\n- TIERS"))
    corpus = window_corpus(tmp_path, size=10)
    ex.index(corpus)
    run = ex.search({"q": "how are big orders made cheaper?"}, k=5)
    assert ex.last_terms["q"] == ["apply_bulk_discounts", "TIERS"]
    assert [corpus.path_of(cid) for cid in run.ids("q")] == ["pricing.py"]

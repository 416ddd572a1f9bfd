"""Claim extraction: reply parsing and batching (docs/metrics.md#factuality)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLMResponseError
from retrieval_bench.metrics.answer.factuality.claims import ClaimExtractor, parse_claims
from tests.fakes.llm import last_user
from tests.unit.metrics.answer.factuality.world import World


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('["Paris is in France.", "Paris is big."]', ["Paris is in France.", "Paris is big."]),
        ('```json\n["a b", "c d"]\n```', ["a b", "c d"]),
        ('Claims: ["a b", "c d"]', ["a b", "c d"]),
        ('{"claims": ["x y"]}', ["x y"]),
        ('[{"claim": "one"}, {"text": "two"}, {"other": 3}]', ["one", "two"]),
        ("- first claim\n- second claim", ["first claim", "second claim"]),
        ("* a\n• b\n+ c", ["a", "b", "c"]),
        ("1. first\n2) second\n(3) third\n[4] fourth", ["first", "second", "third", "fourth"]),
        ("Claim 1: alpha\nClaim 2 - beta", ["alpha", "beta"]),
        ("Claim: gamma", ["gamma"]),
        # numbers that are part of the claim stay
        ("3.5% is the top rate\n10 units get 5%", ["3.5% is the top rate", "10 units get 5%"]),
        ("- Claim-based scoring works", ["Claim-based scoring works"]),
        ("Here are the claims:\n\n- a\n\n- b\n", ["a", "b"]),
        ('- "quoted claim"', ["quoted claim"]),
        ("plain line one\nplain line two", ["plain line one", "plain line two"]),
        # duplicates: case, whitespace and a trailing period do not make a new claim
        (
            "- The sky is blue.\n- the  sky is BLUE\n- Grass is green",
            ["The sky is blue.", "Grass is green"],
        ),
        # a JSON-looking list inside a claim line is part of the claim, not the list
        ('- ROUTE_MODULES lists ["users"]\n- x', ['ROUTE_MODULES lists ["users"]', "x"]),
        # a JSON list of non-strings is not a claim list: read lines instead
        ("[1, 2]", ["[1, 2]"]),
        ("NONE", []),
        ("None.", []),
        ("[]", []),
        ("- NONE", []),
        ("```\n```", []),
    ],
)
def test_parse_claims(reply: str, expected: list[str]) -> None:
    assert parse_claims(reply) == (expected, 0)


def test_parse_claims_caps_and_counts_what_it_drops() -> None:
    reply = "\n".join(f"- claim {k}" for k in range(25))
    claims, dropped = parse_claims(reply, max_claims=20)
    assert claims == [f"claim {k}" for k in range(20)] and dropped == 5
    assert parse_claims("- a\n- a\n- b", max_claims=1) == (["a"], 1)


def test_extract_many_is_one_chat_many_with_shared_and_skipped_texts() -> None:
    world = World(claims={"A.": "- a1\n- a2", "B.": '["b1"]'})
    llm = world.llm()
    out = ClaimExtractor(llm).extract_many(["A.", "", "B.", "A.", "  "])
    assert [c.claims for c in out] == [("a1", "a2"), (), ("b1",), ("a1", "a2"), ()]
    assert llm.batches == [2]  # one round; "A." asked once; blanks need no call
    assert out[1].raw is None and out[1].error is None
    assert out[0].raw == "- a1\n- a2"
    req = llm.requests[0]
    assert req.temperature == 0.0 and req.max_tokens == 256
    assert req.messages[0]["role"] == "system"
    assert last_user(req).endswith("Text:\nA.\n\nClaims:")


def test_empty_batch_makes_no_call() -> None:
    llm = World().llm()
    assert ClaimExtractor(llm).extract_many([]) == []
    assert llm.batches == []


def test_blank_reply_and_failed_call_are_errors_others_go_on() -> None:
    world = World(claims={"A.": "  \n", "B.": LLMResponseError("boom"), "C.": "- c"})
    out = ClaimExtractor(world.llm()).extract_many(["A.", "B.", "C."])
    assert out[0].error == "claim extractor returned an empty reply" and out[0].raw == "  \n"
    assert out[1].error is not None and "LLM call failed" in out[1].error and "boom" in out[1].error
    assert out[2].claims == ("c",) and out[2].ok


def test_cap_is_configurable() -> None:
    world = World(claims={"A.": "- 1a\n- 2b\n- 3c"})
    got = ClaimExtractor(world.llm(), max_claims=2, max_tokens=64).extract("A.")
    assert got.claims == ("1a", "2b") and got.dropped == 1


def test_custom_prompt_file(tmp_path: Path) -> None:
    f = tmp_path / "mine.txt"
    f.write_text("# comment\n[user]\nList facts of: {text}\n", encoding="utf-8")
    world = World()
    llm = world.llm()
    llm.inner.script = lambda req: "- only"
    assert ClaimExtractor(llm, prompt=f).extract("t").claims == ("only",)
    assert last_user(llm.requests[0]) == "List facts of: t"
    assert len(llm.requests[0].messages) == 1  # no [system] section: no system message


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("[user]\nno placeholder\n", "{text}"),
        ("[user]\n{text} and {other}\n", "{other}"),
        ("[user]\n{text!r}\n", "plain name"),
        ("[user]\n{text} {\n", "literal braces"),
        ("no sections at all {text}\n", "no [user] section"),
    ],
)
def test_bad_prompt_file_is_a_config_error(tmp_path: Path, body: str, named: str) -> None:
    f = tmp_path / "p.txt"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        ClaimExtractor(World().llm(), prompt=f)
    assert named in str(err.value)


def test_missing_prompt_file_and_bad_options() -> None:
    with pytest.raises(ConfigError, match="cannot read prompt"):
        ClaimExtractor(World().llm(), prompt="/nonexistent/prompt.txt")
    with pytest.raises(ValueError, match="max_claims"):
        ClaimExtractor(World().llm(), max_claims=0)
    with pytest.raises(ValueError, match="temperature"):
        ClaimExtractor(World().llm(), temperature=-1)
    with pytest.raises(TypeError, match="strings"):
        ClaimExtractor(World().llm()).extract_many([None])  # type: ignore[list-item]

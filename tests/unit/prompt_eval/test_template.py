from __future__ import annotations

import pytest

from retrieval_bench.prompt_eval.errors import InvalidPromptError
from retrieval_bench.prompt_eval.records import Prompt
from retrieval_bench.prompt_eval.template import build_request, check_prompt, fill, placeholders


def test_placeholders_and_fill() -> None:
    t = 'Q: {question}\nReply like {"category": "bug"} or {{literal}} {question}'
    assert placeholders(t) == ["question"]
    assert fill(t, {"question": "why?"}) == (
        'Q: why?\nReply like {"category": "bug"} or {literal} why?'
    )
    assert placeholders("{{question}}") == []  # escaped: not a placeholder


def test_unknown_variable_is_named() -> None:
    p = Prompt("p1", user="Notes: {note}")
    with pytest.raises(InvalidPromptError) as err:
        check_prompt(p, ("notes",), "action_items")
    msg = str(err.value)
    assert "prompt 'p1'" in msg and "unknown variable {note}" in msg and "{notes}" in msg
    with pytest.raises(InvalidPromptError, match="system prompt uses unknown variable {x}"):
        check_prompt(Prompt("p2", user="{notes}", system="{x}"), ("notes",))


@pytest.mark.parametrize(
    ("params", "pattern"),
    [
        ({"temprature": 0.1}, "unknown parameter.*temprature"),
        ({"temperature": 5}, "temperature must be a number in"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"max_tokens": 1.5}, "max_tokens must be a positive integer"),
        ({"stop": 3}, "stop must be"),
    ],
)
def test_bad_parameters(params: dict[str, object], pattern: str) -> None:
    with pytest.raises(InvalidPromptError, match=pattern):
        check_prompt(Prompt("p", user="{a}", parameters=params), ("a",))


def test_empty_name_or_user_prompt() -> None:
    with pytest.raises(InvalidPromptError, match="empty name"):
        check_prompt(Prompt(" ", user="{a}"), ("a",))
    with pytest.raises(InvalidPromptError, match="user prompt is empty"):
        check_prompt(Prompt("p", user=" "), ("a",))


def test_build_request_maps_parameters_and_model() -> None:
    p = Prompt(
        "p",
        user="Q: {a}",
        system="Be brief about {a}.",
        model="other-model",
        parameters={"temperature": 0.2, "max_tokens": 12, "stop": "\n", "top_p": 0.9},
    )
    req = build_request(p, {"a": "x"})
    assert req.messages == (
        {"role": "system", "content": "Be brief about x."},
        {"role": "user", "content": "Q: x"},
    )
    assert (req.temperature, req.max_tokens, req.stop) == (0.2, 12, ("\n",))
    assert req.extra == {"top_p": 0.9, "model": "other-model"}
    bare = build_request(Prompt("q", user="{a}"), {"a": "y"})
    assert bare.messages == ({"role": "user", "content": "y"},)
    assert bare.extra == {} and bare.temperature == 0.0

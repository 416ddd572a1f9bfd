"""Shared helpers for the prompt-evaluation unit tests: a tiny use case, a
temporary store, and a scripted model that answers from a lookup."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.llm.base import ChatRequest
from retrieval_bench.prompt_eval.fields import as_choice
from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import UseCase
from tests.fakes.llm import ScriptedLLM, last_user


class Sentiment(UseCase):
    """One variable, one field: label a review pos/neg."""

    name = "sentiment"
    variables = ("text",)
    fields = ("label",)

    def process(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping) or "label" not in data:
            raise ValueError("missing label")
        return {"label": as_choice(data["label"], "label", ("pos", "neg"))}


SENTIMENT_ROWS = [
    Row("r1", {"text": "great film"}, {"label": "pos"}),
    Row("r2", {"text": "awful plot"}, {"label": "neg"}),
    Row("r3", {"text": "loved it"}, {"label": "pos"}),
    Row("r4", {"text": "boring"}, {"label": "neg"}),
]
MORE_ROWS = [Row(f"x{i}", {"text": f"so-so {i}"}, {"label": "pos"}) for i in range(6)]
TRUTH = {r.variables["text"]: r.expected["label"] for r in SENTIMENT_ROWS + MORE_ROWS}


def prompt(name: str, user: str = "Review: {text}\nLabel:", **kw: Any) -> Prompt:
    return Prompt(name=name, user=user, **kw)


def oracle(wrong: Callable[[ChatRequest, str], bool] = lambda _r, _t: False) -> ScriptedLLM:
    """Answers the true label as JSON, except where ``wrong(request, text)``."""

    def script(req: ChatRequest) -> str:
        text = last_user(req).split("Review: ")[-1].split("\n")[0]
        label = TRUTH[text]
        if wrong(req, text):
            label = "neg" if label == "pos" else "pos"
        return f'Sure: {{"label": "{label}"}}'

    return ScriptedLLM(script)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PromptStore]:
    s = PromptStore(tmp_path / "ws.sqlite")
    yield s
    s.close()


@pytest.fixture
def sentiment() -> Sentiment:
    return Sentiment()

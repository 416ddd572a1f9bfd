"""A scripted "world" for the factuality tests: what the model answers to each prompt.

The script reads the prompt of each request (built from the package's prompt
files) and looks the answer up in plain dicts, so a test states its facts
directly: ``claims={"a text": "- c1\\n- c2"}``, ``entails={("text", "c1"): "YES"}``.
Unlisted entailment questions are answered NO; an unlisted text to split or
classify fails the test loudly (KeyError names it). A value that is an
exception makes that call fail.

:class:`BatchSpy` wraps the scripted model and records the size of every
``chat_many`` call, so tests can assert that batching is real.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from retrieval_bench.llm.base import CallStats, ChatRequest, Completion, LLMError
from tests.fakes.llm import Reply, ScriptedLLM, last_user

_CLAIMS = re.compile(r"Text:\n(?P<text>.*)\n\nClaims:$", re.DOTALL)
_PAIR = re.compile(r"^Text:\n(?P<text>.*)\n\nClaim: (?P<claim>.*)\n\nDoes the text", re.DOTALL)
_INFO = re.compile(r"^Reply:\n(?P<text>.*)\n\nDoes this reply contain no information", re.DOTALL)
_RUBRIC = re.compile(r"Answer:\n(?P<prediction>.*)\n\nWhich label describes", re.DOTALL)
_SOURCE = re.compile(r"Source:\n(?P<source>.*)\n\nWas this source necessary", re.DOTALL)


@dataclass
class World:
    claims: dict[str, Reply] = field(default_factory=dict)
    entails: dict[tuple[str, str], Reply] = field(default_factory=dict)
    contradicts: dict[tuple[str, str], Reply] = field(default_factory=dict)
    informationless: dict[str, Reply] = field(default_factory=dict)
    rubric: dict[str, Reply] = field(default_factory=dict)
    useful: dict[str, Reply] = field(default_factory=dict)
    default_informationless: Reply | None = "NO"

    def reply(self, request: ChatRequest) -> Reply:
        prompt = last_user(request)
        if "Split the text below into atomic claims" in prompt:
            return self.claims[_match(_CLAIMS, prompt)["text"]]
        if "Does the text entail the claim" in prompt:
            m = _match(_PAIR, prompt)
            return self.entails.get((m["text"], m["claim"]), "NO")
        if "Does the text contradict the claim" in prompt:
            m = _match(_PAIR, prompt)
            return self.contradicts.get((m["text"], m["claim"]), "NO")
        if "Does this reply contain no information" in prompt:
            text = _match(_INFO, prompt)["text"]
            if text in self.informationless or self.default_informationless is None:
                return self.informationless[text]
            return self.default_informationless
        if "Which label describes" in prompt:
            return self.rubric[_match(_RUBRIC, prompt)["prediction"]]
        if "Was this source necessary" in prompt:
            return self.useful[_match(_SOURCE, prompt)["source"]]
        raise AssertionError(f"unexpected prompt: {prompt[:200]!r}")

    def llm(self) -> BatchSpy:
        return BatchSpy(ScriptedLLM(self.reply))


def _match(pattern: re.Pattern[str], prompt: str) -> dict[str, str]:
    m = pattern.search(prompt)
    assert m is not None, f"prompt does not have the expected shape: {prompt[:200]!r}"
    return m.groupdict()


class BatchSpy:
    """Delegates to a :class:`ScriptedLLM`; ``batches`` holds each ``chat_many`` size."""

    def __init__(self, inner: ScriptedLLM) -> None:
        self.inner = inner
        self.model = inner.model
        self.stats: CallStats = inner.stats
        self.batches: list[int] = []

    @property
    def requests(self) -> list[ChatRequest]:
        return self.inner.requests

    def prompts(self, marker: str) -> list[str]:
        """User prompts of the requests that contain ``marker``."""
        return [last_user(r) for r in self.inner.requests if marker in last_user(r)]

    def chat(self, request: ChatRequest) -> Completion:
        return self.inner.chat(request)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        self.batches.append(len(requests))
        return self.inner.chat_many(requests)

"""A scripted LLM stand-in for unit tests (never shipped: docs/architecture.md#testing-conventions).

Replies come from a function of the request (or a fixed text), optionally
with first-token logprobs, so every branch of a stage can be driven without a
model. Calls are counted like the real client counts them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from retrieval_bench.llm.base import (
    CallStats,
    ChatRequest,
    Completion,
    LLMError,
    LLMUnavailableError,
    TokenLogprob,
)

Reply = str | Completion | Exception
Script = Callable[[ChatRequest], Reply]


def last_user(request: ChatRequest) -> str:
    """The text of the last user message of a request."""
    return next(m["content"] for m in reversed(request.messages) if m["role"] == "user")


def with_logprobs(text: str, first: Mapping[str, float], model: str = "scripted") -> Completion:
    """A completion whose first token carries ``first`` as its top logprobs."""
    token = next(iter(first), text[:1])
    return Completion(
        text=text,
        model=model,
        logprobs=(TokenLogprob(token, first.get(token, 0.0), dict(first)),),
    )


class ScriptedLLM:
    """Answers each request with ``script(request)`` (a text, a Completion, or an
    exception to raise). Thread-safe; ``requests`` keeps every request seen."""

    def __init__(self, script: Script | str, model: str = "scripted") -> None:
        self.script: Script = (lambda _r: script) if isinstance(script, str) else script
        self.model = model
        self.stats = CallStats()
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        reply = self.script(request)
        if isinstance(reply, Exception):
            with self._lock:
                self.stats.failures += 1
            if isinstance(reply, LLMError):
                raise reply
            raise LLMUnavailableError(str(reply)) from reply
        with self._lock:
            self.stats.calls += 1
        if isinstance(reply, Completion):
            return reply
        return Completion(text=reply, model=self.model)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        out: list[Completion | LLMError] = []
        for r in requests:
            try:
                out.append(self.chat(r))
            except LLMError as exc:
                out.append(exc)
        return out

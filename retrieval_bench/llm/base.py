"""The one door to language models: types and protocol (docs/architecture.md#core-types).

Every stage that needs a model (HyDE, rerankers, keyword proposal, answers,
judges) talks to an :class:`LLM`. The real implementation is
:class:`retrieval_bench.llm.client.LLMClient` (OpenAI-compatible HTTP through
the ``openai`` package, with an SQLite response cache); a scripted stand-in
lives in ``tests/`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from retrieval_bench.errors import RBenchError

Message = Mapping[str, str]
"""``{"role": "system"|"user"|"assistant", "content": "..."}``."""


class LLMError(RBenchError):
    """A model call failed for good (after retries); the sample is marked failed."""


class LLMUnavailableError(LLMError):
    """The server cannot be reached or keeps failing (connection, timeout, 5xx)."""


class LLMResponseError(LLMError):
    """The server answered, but not with something usable (no choices, bad JSON...)."""


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its logprob and the top alternatives."""

    token: str
    logprob: float
    top: Mapping[str, float] = field(default_factory=dict)
    """Alternative token → logprob (includes the token itself when the server does)."""


@dataclass(frozen=True)
class Completion:
    """A model answer plus what it cost."""

    text: str
    model: str
    logprobs: tuple[TokenLogprob, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None


@dataclass(frozen=True)
class ChatRequest:
    """One chat call; ``repeat`` makes otherwise identical calls distinct cache keys
    (for sampling N answers to the same prompt)."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 256
    top_logprobs: int | None = None
    """When set, ask for logprobs of each generated token with this many alternatives."""
    stop: tuple[str, ...] = ()
    repeat: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class CallStats:
    """Counters of one client (or one stage): what the harness records per stage."""

    calls: int = 0
    """Requests answered by the model (cache misses)."""
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    """Summed model latency of the calls that went to the model."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def snapshot(self) -> CallStats:
        return CallStats(**vars(self))

    def since(self, before: CallStats) -> CallStats:
        return CallStats(**{k: getattr(self, k) - getattr(before, k) for k in vars(self)})


class LLM(Protocol):
    """What stages may ask of a model. Implementations must be thread-safe."""

    model: str
    stats: CallStats

    def chat(self, request: ChatRequest) -> Completion:
        """One call; raises :class:`LLMError` after retries."""
        ...

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        """Many calls, concurrently up to the client's limit; failures are returned,
        not raised, so one bad sample never stops a batch."""
        ...


def chat_request(
    user: str,
    system: str | None = None,
    **options: Any,
) -> ChatRequest:
    """Shorthand for the common one-turn prompt."""
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": user})
    return ChatRequest(messages=tuple(messages), **options)

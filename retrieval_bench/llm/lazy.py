"""An LLM handle that starts nothing until a call is made.

Stages whose factory *can* use a model (e.g. the ``exact`` retriever, whose
``terms: llm`` rung asks one) receive this proxy, so a config that never asks
the model — ``exact`` with ``terms: identifiers`` — does not start the local
model server (SPEC §5: started on demand).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from retrieval_bench.llm.base import LLM, CallStats, ChatRequest, Completion, LLMError


class LazyLLM:
    """Implements the :class:`~retrieval_bench.llm.base.LLM` protocol over ``provider``,
    called once, on the first use of ``model``, ``stats`` or a chat method."""

    def __init__(self, provider: Callable[[], LLM]) -> None:
        self._provider = provider
        self._client: LLM | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self) -> LLM:
        with self._lock:
            if self._client is None:
                self._client = self._provider()
            return self._client

    @property
    def model(self) -> str:
        return self.client().model

    @property
    def stats(self) -> CallStats:
        return self.client().stats

    def chat(self, request: ChatRequest) -> Completion:
        return self.client().chat(request)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        return self.client().chat_many(requests)


class SharedProvider:
    """Makes one client with ``factory`` on first call and returns it ever after; ``made``
    tells whether (and which) client exists without starting one — what per-stage call
    accounting needs when one client serves several datasets of a run."""

    def __init__(self, factory: Callable[[], LLM]) -> None:
        self._factory = factory
        self.made: LLM | None = None
        self._lock = threading.Lock()

    def __call__(self) -> LLM:
        with self._lock:
            if self.made is None:
                self.made = self._factory()
            return self.made

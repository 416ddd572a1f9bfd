"""The one lazy LLM handle: a client made on first use, shared ever after.

A benchmark run, ``rbench eval`` and the answer metrics all hold a
:class:`LazyLLM` over "how to make the client" (``make_llm`` with the
config's ``llm:`` section). Stages and metrics that declare ``needs_llm``
receive it (or the client it makes); nothing starts the local model server
until a model call is actually made, so a config that never asks the model —
``exact`` with ``terms: identifiers`` — starts none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, CallStats, ChatRequest, Completion, LLMError

NO_LLM = "this stage needs an LLM but none is configured"


class LazyLLM:
    """Implements the :class:`~retrieval_bench.llm.base.LLM` protocol over the client
    ``provider`` makes, once, on the first use of ``model``, ``stats`` or a chat
    method; calling the handle returns that client (so it is also a provider).

    :attr:`made` tells whether (and which) client exists without making one —
    what per-stage call accounting needs when one client serves several datasets.
    Without a provider, the first use raises :class:`ConfigError` (``missing``).
    """

    def __init__(self, provider: Callable[[], LLM] | None, *, missing: str = NO_LLM) -> None:
        self._provider = provider
        self._missing = missing
        self._client: LLM | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, provider: Callable[[], LLM] | None) -> LazyLLM:
        """``provider`` itself when it is a :class:`LazyLLM`, else one over it."""
        return provider if isinstance(provider, LazyLLM) else cls(provider)

    @property
    def available(self) -> bool:
        """Whether a client can be made (a provider was given)."""
        return self._provider is not None or self._client is not None

    @property
    def made(self) -> LLM | None:
        """The client, if it was made; never makes one."""
        return self._client

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self) -> LLM:
        """The client, made now if it was not yet."""
        with self._lock:
            if self._client is None:
                if self._provider is None:
                    raise ConfigError(self._missing)
                self._client = self._provider()
            return self._client

    def __call__(self) -> LLM:
        return self.client()

    @property
    def model(self) -> str:
        return self.client().model

    @model.setter
    def model(self, value: str) -> None:
        self.client().model = value

    @property
    def stats(self) -> CallStats:
        return self.client().stats

    @stats.setter
    def stats(self, value: CallStats) -> None:
        self.client().stats = value

    def chat(self, request: ChatRequest) -> Completion:
        return self.client().chat(request)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        return self.client().chat_many(requests)

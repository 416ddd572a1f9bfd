"""An LLM handle that reports each finished call as progress.

LLM stages (HyDE, the LLM rerankers, the answerer) and prompt evaluations
send all their calls through one ``chat_many``, which can take minutes on a
local model. Wrapping the stage's client in :class:`ReportingLLM` shows those
minutes as ``[shopapi] llm-yesno: 40/250 LLM calls (16%), eta 3m10s``
without changing any stage: the calls are the same ``chat`` calls the client's
own ``chat_many`` makes (up to its concurrency at once, failures returned,
not raised), only counted as they finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from retrieval_bench.llm.base import LLM, CallStats, ChatRequest, Completion, LLMError
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.progress import Progress

UNIT = "LLM calls"


def concurrency_of(llm: LLM) -> int:
    """The client's concurrency limit (1 when it has none)."""
    target: object = llm.client() if isinstance(llm, LazyLLM) else llm
    settings = getattr(target, "settings", None)
    value = getattr(settings, "concurrency", 1)
    return max(1, int(value)) if isinstance(value, int) else 1


class ReportingLLM:
    """Implements the :class:`~retrieval_bench.llm.base.LLM` protocol over ``inner``;
    ``chat_many`` reports ``(label, calls done, calls asked, unit)``."""

    def __init__(self, inner: LLM, progress: Progress, label: str, unit: str = UNIT) -> None:
        self.inner = inner
        self.progress = progress
        self.label = label
        self.unit = unit

    @property
    def model(self) -> str:
        return self.inner.model

    @model.setter
    def model(self, value: str) -> None:
        self.inner.model = value

    @property
    def stats(self) -> CallStats:
        return self.inner.stats

    @stats.setter
    def stats(self, value: CallStats) -> None:
        self.inner.stats = value

    def chat(self, request: ChatRequest) -> Completion:
        return self.inner.chat(request)

    def _one(self, request: ChatRequest) -> Completion | LLMError:
        try:
            return self.inner.chat(request)
        except LLMError as exc:
            return exc

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        total = len(requests)
        if total == 0:
            return []
        self.progress(self.label, 0, total, self.unit)
        workers = min(concurrency_of(self.inner), total)
        if workers == 1:
            out: list[Completion | LLMError] = []
            for request in requests:
                out.append(self._one(request))
                self.progress(self.label, len(out), total, self.unit)
            return out
        results: dict[int, Completion | LLMError] = {}
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(self._one, r): i for i, r in enumerate(requests)}
            for future in as_completed(futures):  # reported here, on the calling thread
                results[futures[future]] = future.result()
                self.progress(self.label, len(results), total, self.unit)
        return [results[i] for i in range(total)]

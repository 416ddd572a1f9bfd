"""The real LLM client: any OpenAI-compatible server through the ``openai`` package.

One door for every model call (docs/architecture.md#core-types), with:

* a response cache keyed by (model, messages/prompt, parameters, repeat
  index) — a second identical run makes zero model calls;
* a concurrency limit (``chat_many`` runs up to ``concurrency`` calls at once);
* retries with exponential backoff on connection errors, timeouts, 429 and
  5xx; 4xx answers and unusable bodies fail at once (retrying won't help);
* per-call latency, tokens and cost recorded (``stats`` and the cache's
  ``calls`` table);
* chat, legacy completions, and first-token/all-token logprobs.

Errors are one line naming the server and what to do
(docs/architecture.md#bad-input-and-failures).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import openai

from retrieval_bench.llm.base import (
    CallStats,
    ChatRequest,
    Completion,
    LLMError,
    LLMResponseError,
    LLMUnavailableError,
    TokenLogprob,
)
from retrieval_bench.llm.cache import ResponseCache, request_key
from retrieval_bench.llm.settings import LLMSpec

if TYPE_CHECKING:
    from retrieval_bench.llm.local_server import ServerHold

_RETRYABLE = (
    openai.APIConnectionError,  # includes APITimeoutError
    openai.RateLimitError,
    openai.InternalServerError,
)


def _logprobs_from_chat(choice: dict[str, Any]) -> tuple[TokenLogprob, ...]:
    content = (choice.get("logprobs") or {}).get("content") or []
    out = []
    for item in content:
        top = {t["token"]: float(t["logprob"]) for t in item.get("top_logprobs") or []}
        out.append(TokenLogprob(item["token"], float(item["logprob"]), top))
    return tuple(out)


def _logprobs_from_completion(choice: dict[str, Any]) -> tuple[TokenLogprob, ...]:
    lp = choice.get("logprobs") or {}
    tokens = lp.get("tokens") or []
    values = lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs") or [None] * len(tokens)
    return tuple(
        TokenLogprob(t, float(v if v is not None else 0.0), dict(top or {}))
        for t, v, top in zip(tokens, values, tops, strict=False)
    )


def parse_response(body: dict[str, Any], model: str, legacy: bool = False) -> Completion:
    """A chat or completions response body → :class:`Completion`; garbage → LLMResponseError."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LLMResponseError(f"model {model}: response has no choices: {str(body)[:200]}")
    choice = choices[0]
    try:
        if legacy:
            text = choice.get("text")
            logprobs = _logprobs_from_completion(choice)
        else:
            text = (choice.get("message") or {}).get("content")
            logprobs = _logprobs_from_chat(choice)
    except (KeyError, TypeError, ValueError) as exc:
        raise LLMResponseError(f"model {model}: malformed logprobs in response: {exc}") from exc
    if text is not None and not isinstance(text, str):
        raise LLMResponseError(f"model {model}: response text is not a string: {text!r:.100}")
    usage = body.get("usage") or {}
    return Completion(
        text=text or "",
        model=str(body.get("model") or model),
        logprobs=logprobs,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
    )


class LLMClient:
    """Thread-safe client; see the module docstring.

    ``settings.base_url`` must be set (:func:`~retrieval_bench.llm.factory.make_llm`
    fills it in for the local server); responses are cached in ``cache`` (``make_llm``
    passes one unless ``settings.cache`` is false).
    """

    def __init__(self, settings: LLMSpec, cache: ResponseCache | None = None):
        if settings.base_url is None:
            raise ValueError("LLMClient needs settings.base_url (make_llm starts a local server)")
        self.settings = settings
        self.base_url: str = settings.base_url
        self.model = settings.model
        self.cache = cache
        self.stats = CallStats()
        self.server_hold: ServerHold | None = None
        """The local server this client holds (set by ``make_llm``; released by
        :func:`~retrieval_bench.llm.factory.release_server`)."""
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(1, settings.concurrency))
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=settings.api_key(),
            timeout=settings.timeout_s,
            max_retries=0,  # we retry ourselves, with logging and our own backoff
        )

    # ------------------------------------------------------------- requests
    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.top_logprobs is not None:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        if request.stop:
            payload["stop"] = list(request.stop)
        payload.update(request.extra)
        return payload

    def chat(self, request: ChatRequest) -> Completion:
        if not request.messages:
            raise LLMResponseError("empty request: no messages to send")
        payload = self._payload(request)
        return self._call(payload, request.repeat, legacy=False)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 64,
        temperature: float = 0.0,
        top_logprobs: int | None = None,
        stop: Sequence[str] = (),
        repeat: int = 0,
    ) -> Completion:
        """Legacy ``/v1/completions`` (raw prompt, no chat template)."""
        payload: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if top_logprobs is not None:
            payload["logprobs"] = top_logprobs
        if stop:
            payload["stop"] = list(stop)
        return self._call(payload, repeat, legacy=True)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        def one(r: ChatRequest) -> Completion | LLMError:
            try:
                return self.chat(r)
            except LLMError as exc:
                return exc

        workers = max(1, min(self.settings.concurrency, len(requests)))
        if workers == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, requests))

    # ---------------------------------------------------------------- core
    def _call(self, payload: dict[str, Any], repeat: int, legacy: bool) -> Completion:
        key = request_key(
            {"endpoint": "completions" if legacy else "chat", "repeat": repeat, **payload}
        )
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self.stats.cache_hits += 1
                done = parse_response(hit, self.model, legacy)
                return Completion(**{**vars(done), "cached": True})
        with self._slots:
            body, latency = self._send(payload, key, legacy)
        completion = parse_response(body, self.model, legacy)
        completion = Completion(**{**vars(completion), "latency_s": latency})
        cost = (
            completion.prompt_tokens * self.settings.cost_per_1k_prompt
            + completion.completion_tokens * self.settings.cost_per_1k_completion
        ) / 1000
        with self._lock:
            self.stats.calls += 1
            self.stats.prompt_tokens += completion.prompt_tokens
            self.stats.completion_tokens += completion.completion_tokens
            self.stats.seconds += latency
        if self.cache is not None:
            self.cache.put(key, self.model, payload, body)
            self.cache.log_call(
                key,
                self.model,
                latency,
                completion.prompt_tokens,
                completion.completion_tokens,
                cost,
            )
        return completion

    def _send(
        self, payload: dict[str, Any], key: str, legacy: bool
    ) -> tuple[dict[str, Any], float]:
        """POST with retries; returns (JSON body, latency of the successful attempt)."""
        s = self.settings
        endpoint = self._client.completions if legacy else self._client.chat.completions
        last: Exception | None = None
        for attempt in range(s.max_retries + 1):
            t0 = time.perf_counter()
            try:
                response = endpoint.create(**payload)
                latency = time.perf_counter() - t0
                body = response.model_dump() if hasattr(response, "model_dump") else response
                if not isinstance(body, dict):
                    raise LLMResponseError(f"model {self.model}: response is not a JSON object")
                return body, latency
            except _RETRYABLE as exc:
                last = exc
                if attempt < s.max_retries:
                    time.sleep(s.backoff_s * (2**attempt) * (1 + random.random() / 4))
            except openai.APIStatusError as exc:
                self._fail(key, f"HTTP {exc.status_code}")
                raise LLMResponseError(
                    f"LLM server {s.base_url} refused the request (HTTP {exc.status_code}): "
                    f"{str(exc)[:200]}"
                ) from exc
            except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
                self._fail(key, "unparseable response")
                raise LLMResponseError(
                    f"LLM server {s.base_url} answered with something that is not an "
                    f"OpenAI-compatible response: {str(exc)[:200]}"
                ) from exc
        self._fail(key, type(last).__name__)
        raise LLMUnavailableError(
            f"LLM server {s.base_url} unreachable after {s.max_retries + 1} attempts "
            f"({type(last).__name__}); start it with `rbench llm start` or check llm.base_url"
        ) from last

    def _fail(self, key: str, error: str) -> None:
        with self._lock:
            self.stats.failures += 1
        if self.cache is not None:
            self.cache.log_call(key, self.model, 0.0, error=error)

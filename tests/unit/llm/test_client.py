"""The LLM client against a scripted OpenAI-compatible HTTP server (stdlib),
so retries, errors, caching, logprob parsing and concurrency are exercised
over real HTTP without a model."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.llm.base import (
    ChatRequest,
    LLMResponseError,
    LLMUnavailableError,
    chat_request,
)
from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.client import LLMClient, parse_response
from retrieval_bench.llm.settings import LLMSpec

Handler = Callable[[dict[str, Any]], tuple[int, Any]]


def chat_body(text: str, top: dict[str, float] | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
    }
    if top is not None:
        first = next(iter(top))
        choice["logprobs"] = {
            "content": [
                {
                    "token": first,
                    "logprob": top[first],
                    "bytes": None,
                    "top_logprobs": [
                        {"token": t, "logprob": lp, "bytes": None} for t, lp in top.items()
                    ],
                }
            ]
        }
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [choice],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
    }


class Scripted:
    """A tiny HTTP server whose answers come from ``handler(request_json)``."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        lock = threading.Lock()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.requests.append(body)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    status, payload = outer.handler(body)
                finally:
                    with lock:
                        outer.in_flight -= 1
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Scripted]]:
    servers: list[Scripted] = []

    def make(handler: Handler) -> Scripted:
        servers.append(Scripted(handler))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def client(url: str, tmp_path: Path | None = None, **kw: Any) -> LLMClient:
    settings = LLMSpec(base_url=url, model="m", timeout_s=5, backoff_s=0.01, **kw)
    return LLMClient(settings, ResponseCache.in_dir(tmp_path) if tmp_path else None)


def test_chat_logprobs_usage_and_request_shape(serve: Any) -> None:
    srv = serve(lambda body: (200, chat_body("Yes", {"Yes": -0.2, "No": -1.9})))
    llm = client(srv.url)
    out = llm.chat(chat_request("q?", system="sys", max_tokens=1, top_logprobs=5))
    assert out.text == "Yes" and out.prompt_tokens == 7 and out.completion_tokens == 1
    assert out.logprobs[0].top == {"Yes": -0.2, "No": -1.9}
    sent = srv.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": "sys"}
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5 and sent["max_tokens"] == 1
    assert llm.stats.calls == 1 and llm.stats.tokens == 8


def test_cache_makes_second_call_free_and_repeat_index_is_a_new_key(
    serve: Any, tmp_path: Path
) -> None:
    srv = serve(lambda body: (200, chat_body("hello")))
    llm = client(srv.url, tmp_path)
    req = chat_request("same")
    assert llm.chat(req).cached is False
    again = llm.chat(req)
    assert again.cached is True and again.text == "hello"
    assert len(srv.requests) == 1 and llm.stats.cache_hits == 1
    llm.chat(ChatRequest(messages=req.messages, repeat=1))
    assert len(srv.requests) == 2
    # a fresh client over the same cache file (a re-run) makes no calls at all
    rerun = client(srv.url, tmp_path)
    rerun.chat(req)
    assert rerun.stats.calls == 0 and len(srv.requests) == 2
    assert ResponseCache.in_dir(tmp_path).call_count(errors=False) == 2


def test_retries_5xx_then_succeeds(serve: Any) -> None:
    answers = iter([(500, {"error": "busy"}), (503, {"error": "busy"}), (200, chat_body("ok"))])
    srv = serve(lambda body: next(answers))
    assert client(srv.url).chat(chat_request("x")).text == "ok"
    assert len(srv.requests) == 3


def test_4xx_fails_at_once_without_retry(serve: Any) -> None:
    srv = serve(lambda body: (400, {"error": {"message": "bad"}}))
    llm = client(srv.url)
    with pytest.raises(LLMResponseError, match="HTTP 400"):
        llm.chat(chat_request("x"))
    assert len(srv.requests) == 1 and llm.stats.failures == 1


@pytest.mark.parametrize(
    "payload",
    [b"<html>not json</html>", {"choices": []}, {"object": "chat.completion"}],
)
def test_garbage_answers_are_response_errors(serve: Any, payload: Any) -> None:
    srv = serve(lambda body: (200, payload))
    with pytest.raises(LLMResponseError):
        client(srv.url, max_retries=1).chat(chat_request("x"))


def test_server_down_is_unavailable_after_retries() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = client(f"http://127.0.0.1:{port}/v1", max_retries=2)
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailableError, match="unreachable after 3 attempts") as info:
        llm.chat(chat_request("x"))
    assert "rbench llm start" in str(info.value) and time.perf_counter() - t0 < 5
    # chat_many returns the failure instead of raising: the batch goes on
    results = llm.chat_many([chat_request("a"), chat_request("b")])
    assert all(isinstance(r, LLMUnavailableError) for r in results)


def test_concurrency_limit_is_respected(serve: Any) -> None:
    def slow(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(0.05)
        return 200, chat_body(body["messages"][-1]["content"])

    srv = serve(slow)
    llm = client(srv.url, concurrency=3)
    outs = llm.chat_many([chat_request(str(i)) for i in range(12)])
    assert [o.text for o in outs] == [str(i) for i in range(12)]  # type: ignore[union-attr]
    assert 1 < srv.max_in_flight <= 3


def test_legacy_completion_logprobs_parse() -> None:
    body = {
        "choices": [
            {
                "text": " Yes",
                "logprobs": {
                    "tokens": [" Yes"],
                    "token_logprobs": [-0.1],
                    "top_logprobs": [{" Yes": -0.1, " No": -2.4}],
                },
                "finish_reason": "length",
            }
        ]
    }
    out = parse_response(body, "m", legacy=True)
    assert out.text == " Yes" and out.logprobs[0].top == {" Yes": -0.1, " No": -2.4}


def test_empty_request_is_rejected() -> None:
    with pytest.raises(LLMResponseError, match="empty request"):
        client("http://127.0.0.1:9/v1").chat(ChatRequest(messages=()))

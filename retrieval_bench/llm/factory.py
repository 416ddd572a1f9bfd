"""Build the configured LLM client: the local server by default, any OpenAI-compatible
endpoint with one config change (``llm.base_url``;
docs/architecture.md#components-and-how-each-starts)."""

from __future__ import annotations

from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.client import LLMClient
from retrieval_bench.llm.local_server import LocalServer
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.loads import timed_load
from retrieval_bench.workspace import Workspace


def make_llm(spec: LLMSpec | None = None, ws: Workspace | None = None) -> LLMClient:
    spec = spec or LLMSpec()
    ws = ws or Workspace.default()
    base_url = spec.base_url
    if base_url is None:
        server = LocalServer(ws)
        running = server.running()
        if running is None:
            with timed_load("local LLM server"):  # a start takes seconds to minutes
                running = server.start()
        base_url = running.base_url
    settings = spec.model_copy(update={"base_url": base_url})
    cache = ResponseCache.in_dir(ws.cache_dir) if spec.cache else None
    return LLMClient(settings, cache)

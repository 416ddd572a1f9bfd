"""Build the configured LLM client: the local server by default, any OpenAI-compatible
endpoint with one config change (``llm.base_url``;
docs/architecture.md#components-and-how-each-starts)."""

from __future__ import annotations

import contextlib

from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.client import LLMClient
from retrieval_bench.llm.local_server import LocalServer
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.loads import timed_load
from retrieval_bench.workspace import Workspace


def make_llm(
    spec: LLMSpec | None = None, ws: Workspace | None = None, hold: bool = True
) -> LLMClient:
    """The client of ``spec``; without a ``base_url``, of the workspace's local server,
    started on demand when none runs. With ``hold`` the client holds that server
    (:meth:`~retrieval_bench.llm.local_server.LocalServer.hold`) until
    :func:`release_server`; a pool worker, whose parent holds it for the run, does not."""
    spec = spec or LLMSpec()
    ws = ws or Workspace.default()
    base_url = spec.base_url
    held = None
    if base_url is None:
        server = LocalServer(ws)
        running = server.running()
        # a start takes seconds to minutes: timed, so no stage is charged for it
        loading = timed_load("local LLM server") if running is None else contextlib.nullcontext()
        with loading:
            if hold:
                held = server.hold()
                running = held.state
            elif running is None:
                running = server.start(on_demand=True)
        base_url = running.base_url
    settings = spec.model_copy(update={"base_url": base_url})
    cache = ResponseCache.in_dir(ws.cache_dir) if spec.cache else None
    client = LLMClient(settings, cache)
    client.server_hold = held
    return client


def release_server(client: object, keep: bool = False) -> bool:
    """Let ``client`` (made by :func:`make_llm`) go of the local server it holds:
    stopped when a run started it on demand, no other live process holds it and
    not ``keep`` (``llm.keep_server``, ``--keep-llm-server``). True when stopped;
    a client of another endpoint (or a test's stand-in) holds nothing."""
    held = getattr(client, "server_hold", None)
    return bool(held.release(keep)) if held is not None else False

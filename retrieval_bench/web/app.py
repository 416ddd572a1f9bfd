"""The web UI's FastAPI app (docs/architecture.md#interfaces): ``create_app(ws)``
composes one router per area (:mod:`.routes`): the benchmark pages
(:mod:`.routes.runs`), run comparison (:mod:`.routes.compare`), sweeps
(:mod:`.routes.sweeps`), the prompt lab (:mod:`.routes.lab`) and the JSON API its
page posts to (:mod:`.routes.api`).

Run it with ``rbench serve`` (uvicorn on 127.0.0.1). Everything is server-rendered;
one CSS and one JS file come from the package (no CDN: the machine may be offline;
so FastAPI's Swagger and ReDoc pages, which load from a CDN, are off: the schema is
``/api/openapi.json``). Every request passes :mod:`.guard` first: the Host check,
and the server's token for writes (docs/architecture.md#web-ui-security).
The LLM for prompt runs is made lazily from ``LLMSpec``; tests inject one. An error
in any route is answered with a readable page (JSON under ``/api/``) naming what
failed, the file involved and what to do (:func:`.errors.install`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import Response

from retrieval_bench.web import errors
from retrieval_bench.web.guard import Guard, GuardMiddleware
from retrieval_bench.web.jobs import JobRegistry
from retrieval_bench.web.routes import api, compare, lab, runs, sweeps
from retrieval_bench.workspace import Workspace

LLMProvider = Callable[[], Any]
"""Returns an object with the LLM protocol (``chat``/``chat_many``)."""

_STATIC = {"app.css": "text/css", "app.js": "text/javascript"}


def _default_llm(ws: Workspace) -> tuple[LLMProvider, Callable[[], None]]:
    """The workspace's local model, made on the first prompt run, and how to let go
    of it: a server started on demand for the lab stops when ``rbench serve`` ends
    (unless the user started it with ``rbench llm start``)."""
    made: list[Any] = []

    def provide() -> Any:
        if not made:
            from retrieval_bench.llm.factory import make_llm
            from retrieval_bench.llm.settings import LLMSpec

            made.append(make_llm(LLMSpec(), ws))
        return made[0]

    def release() -> None:
        if made:
            from retrieval_bench.llm.factory import release_server

            release_server(made.pop())

    return provide, release


def _static() -> APIRouter:
    """``/static/app.css`` and ``/static/app.js``, from the package."""
    routes = APIRouter()

    @routes.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            return errors.json_error(404, f"no static file {name!r}")
        text = resources.files("retrieval_bench.web").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name])

    return routes


def create_app(
    ws: Workspace, llm: LLMProvider | None = None, guard: Guard | None = None
) -> FastAPI:
    """The app over one workspace; ``llm`` (a zero-argument provider) overrides the
    default local model for prompt runs; ``guard`` holds the token and the host
    served (default: 127.0.0.1 and a fresh random token), kept as ``app.state.guard``
    (the model provider as ``app.state.llm``)."""
    app = FastAPI(title="rbench", docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json")  # fmt: skip
    app.state.guard = guard or Guard.new()
    app.add_middleware(GuardMiddleware, guard=app.state.guard)
    errors.install(app, ws)
    app.include_router(_static())
    app.include_router(runs.router(ws))
    app.include_router(compare.router(ws))
    app.include_router(sweeps.router(ws))
    app.include_router(lab.router(ws))
    if llm is None:
        llm, release = _default_llm(ws)
        app.router.add_event_handler("shutdown", release)
    app.state.llm = llm
    app.include_router(api.router(ws, llm, JobRegistry()))
    return app

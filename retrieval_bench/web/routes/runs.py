"""Benchmark run pages: ``/`` (the runs list), ``/runs/{run_id}`` (one run) and
``/runs/{run_id}/queries/{query_id}`` (a query's drill-down).

Links quote ids with ``quote(id, safe='')``; Starlette matches routes against the
*decoded* path, so an id with ``/`` (``pkg/sub-123``, ``ds:a/b``) arrives with its
slashes restored: the drill-down's ``query_id`` is a ``path`` parameter so that it
still matches (``run_id`` is made by the harness and never holds one)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from retrieval_bench.web import drilldown, runs
from retrieval_bench.workspace import Workspace


def router(ws: Workspace) -> APIRouter:
    """The run pages over ``ws``."""
    routes = APIRouter()

    @routes.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse(runs.runs_page(ws))

    @routes.get("/runs/{run_id}", response_class=HTMLResponse)
    def run(
        run_id: str, stage: str | None = None, sort: str | None = None, order: str = "asc"
    ) -> HTMLResponse:
        return HTMLResponse(runs.run_page(ws, run_id, stage or None, sort or None, order))

    @routes.get("/runs/{run_id}/queries/{query_id:path}", response_class=HTMLResponse)
    def query(run_id: str, query_id: str) -> HTMLResponse:
        return HTMLResponse(drilldown.query_page(ws, run_id, query_id))

    return routes

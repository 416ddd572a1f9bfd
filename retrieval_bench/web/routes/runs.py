"""Benchmark run pages: ``/`` (the runs list), ``/runs/{run_id}`` (one run) and
``/runs/{run_id}/queries/{query_id}`` (a query's drill-down)."""

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

    @routes.get("/runs/{run_id}/queries/{query_id}", response_class=HTMLResponse)
    def query(run_id: str, query_id: str) -> HTMLResponse:
        return HTMLResponse(drilldown.query_page(ws, run_id, query_id))

    return routes

"""``/compare?base=RUN[:STAGE]&cand=RUN[:STAGE]``: two runs side by side with
significance (:mod:`retrieval_bench.web.compare`)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from retrieval_bench.web import compare
from retrieval_bench.workspace import Workspace


def router(ws: Workspace) -> APIRouter:
    """The comparison page over ``ws``."""
    routes = APIRouter()

    @routes.get("/compare", response_class=HTMLResponse)
    def compare_runs(base: str, cand: str) -> HTMLResponse:
        return HTMLResponse(compare.compare_page(ws, base.strip(), cand.strip()))

    return routes

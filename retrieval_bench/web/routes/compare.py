"""``/compare?base=RUN[:STAGE]&cand=RUN[:STAGE]``: two runs side by side with
significance (:mod:`retrieval_bench.web.compare`); runs on different data are
refused (status 400) unless ``allow_different_data=1``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from retrieval_bench.harness.compare.sides import DifferentDataError
from retrieval_bench.web import compare
from retrieval_bench.workspace import Workspace


def router(ws: Workspace) -> APIRouter:
    """The comparison page over ``ws``."""
    routes = APIRouter()

    @routes.get("/compare", response_class=HTMLResponse)
    def compare_runs(base: str, cand: str, allow_different_data: bool = False) -> HTMLResponse:
        base, cand = base.strip(), cand.strip()
        try:
            return HTMLResponse(compare.compare_page(ws, base, cand, allow_different_data))
        except DifferentDataError as exc:  # refused, with a link that compares anyway
            return HTMLResponse(compare.different_data_page(base, cand, exc.detail), 400)

    return routes

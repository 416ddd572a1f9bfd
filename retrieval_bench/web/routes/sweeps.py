"""Sweep pages and their JSON: ``/sweeps`` (the stored sweeps), ``/sweeps/{sweep_id}``
(one sweep: ranked table, quality-versus-cost chart, report split; see
:mod:`retrieval_bench.web.sweeps`), ``/api/sweeps`` and ``/api/sweeps/{sweep_id}``
(the stored records as JSON)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from retrieval_bench.store.sweeps import list_sweeps
from retrieval_bench.web import sweeps
from retrieval_bench.web.rundata import open_db
from retrieval_bench.workspace import Workspace


def router(ws: Workspace) -> APIRouter:
    """The sweep pages and API over ``ws``."""
    routes = APIRouter()

    @routes.get("/sweeps", response_class=HTMLResponse)
    def sweeps_list() -> HTMLResponse:
        return HTMLResponse(sweeps.sweeps_page(ws))

    @routes.get("/sweeps/{sweep_id}", response_class=HTMLResponse)
    def sweep(sweep_id: str) -> HTMLResponse:
        return HTMLResponse(sweeps.sweep_page(ws, sweep_id))

    @routes.get("/api/sweeps")
    def api_sweeps() -> list[dict[str, Any]]:
        if not ws.db_path.exists():
            return []
        with open_db(ws) as db:
            return [
                {"id": s.id, "name": s.name, "status": s.status, "created_at": s.created_at,
                 "finished_at": s.finished_at, "error": s.error, "summary": s.summary}
                for s in list_sweeps(db)
            ]  # fmt: skip

    @routes.get("/api/sweeps/{sweep_id}")
    def api_sweep(sweep_id: str) -> dict[str, Any]:
        return dataclasses.asdict(sweeps.load_sweep(ws, sweep_id))

    return routes

"""Prompt-lab pages: ``/prompts`` (the use cases), ``/prompts/{uc}`` (one use
case's rows, prompts, results and history) and
``/prompts/{uc}/runs/{run_id}/{prompt}`` (a prompt's per-row detail); their
buttons post to :mod:`.api`."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import registered_use_case
from retrieval_bench.web import lab
from retrieval_bench.workspace import Workspace


def router(ws: Workspace) -> APIRouter:
    """The prompt-lab pages over ``ws``."""
    routes = APIRouter()

    @routes.get("/prompts", response_class=HTMLResponse)
    def prompts_index() -> HTMLResponse:
        with PromptStore.for_workspace(ws) as s:
            return HTMLResponse(lab.index_page(s))

    @routes.get("/prompts/{uc}", response_class=HTMLResponse)
    def prompt_lab(uc: str) -> HTMLResponse:
        use_case = registered_use_case(uc)
        with PromptStore.for_workspace(ws) as s:
            return HTMLResponse(lab.lab_page(use_case, s))

    @routes.get("/prompts/{uc}/runs/{run_id}/{prompt}", response_class=HTMLResponse)
    def prompt_detail(uc: str, run_id: str, prompt: str) -> HTMLResponse:
        use_case = registered_use_case(uc)
        with PromptStore.for_workspace(ws) as s:
            return HTMLResponse(lab.detail_page(use_case, s, run_id, prompt))

    return routes

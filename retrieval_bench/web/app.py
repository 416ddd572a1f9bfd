"""The web UI's FastAPI app (SPEC §6): ``create_app(ws)`` serves the benchmark pages
(:mod:`.runs`), the prompt lab (:mod:`.lab`) and the JSON API its page posts to.

Run it with ``rbench serve`` (uvicorn on 127.0.0.1). Everything is server-rendered;
one CSS and one JS file come from the package (no CDN: the machine may be offline).
The LLM for prompt runs is made lazily from ``LLMSpec``; tests inject one. An error
in any route is answered with a readable page (JSON under ``/api/``) naming what
failed, the file involved and what to do (:mod:`.errors`).
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from retrieval_bench.errors import RBenchError
from retrieval_bench.prompt_eval.errors import (
    ImportFormatError,
    InvalidPromptError,
    InvalidRowError,
)
from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import UseCase, get_use_case
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.web import errors, lab, runs
from retrieval_bench.web.jobs import Job, JobRegistry
from retrieval_bench.workspace import Workspace

LLMProvider = Callable[[], Any]
"""Returns an object with the LLM protocol (``chat``/``chat_many``)."""

_STATIC = {"app.css": "text/css", "app.js": "text/javascript"}


def _default_llm(ws: Workspace) -> LLMProvider:
    made: list[Any] = []

    def provide() -> Any:
        if not made:
            from retrieval_bench.config import LLMSpec
            from retrieval_bench.llm.factory import make_llm

            made.append(make_llm(LLMSpec(), ws))
        return made[0]

    return provide


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_app(ws: Workspace, llm: LLMProvider | None = None) -> FastAPI:
    """The app over one workspace; ``llm`` (a zero-argument provider) overrides the
    default local model for prompt runs."""
    app = FastAPI(title="rbench", docs_url="/api/docs", redoc_url=None)
    jobs = JobRegistry()
    provide_llm = llm or _default_llm(ws)

    @contextmanager
    def store() -> Iterator[PromptStore]:
        with PromptStore.for_workspace(ws) as s:
            yield s

    def html(body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status)

    async def failure(request: Request, exc: Exception) -> Response:
        """Any error of a route: a readable page (JSON under /api/), see :mod:`.errors`."""
        what = errors.describe(exc, ws, f"{request.method} {request.url.path}")
        if request.url.path.startswith("/api/"):
            message = what.what if what.file is None or what.file in what.what else (
                f"{what.what} ({what.file})")  # fmt: skip
            return _error(what.status, message)
        return html(errors.render(what), what.status)

    # our own errors, SQLite's and file errors are answered here; anything else
    # reaches the catch-all (Starlette then also logs its traceback)
    for kind in (RBenchError, sqlite3.Error, OSError, Exception):
        app.add_exception_handler(kind, failure)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return _error(exc.status_code, str(exc.detail))
        title = "Not found" if exc.status_code == 404 else f"Error {exc.status_code}"
        todo = ["Follow the links from the Runs page or the Prompt lab."]
        text = f"{request.method} {request.url.path}: {exc.detail}"
        return html(errors.render(errors.Failure(exc.status_code, title, text, None, todo)),
                    exc.status_code)  # fmt: skip

    @app.exception_handler(RequestValidationError)
    async def bad_params(request: Request, exc: RequestValidationError) -> Response:
        """A missing or malformed query parameter (``/compare`` without ``base``)."""
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e.get('loc', ())[1:]) or 'request'}: {e.get('msg', '')}"
            for e in exc.errors()
        )  # fmt: skip
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": problems, "detail": exc.errors()}, status_code=422)
        todo = ["Fill in the form on the page that links here (e.g. both runs to compare)."]
        text = f"{request.method} {request.url.path}: {problems}"
        return html(errors.render(errors.Failure(400, "Bad request", text, None, todo)), 400)

    # ------------------------------------------------------------ static
    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            return _error(404, f"no static file {name!r}")
        text = resources.files("retrieval_bench.web").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name])

    # ------------------------------------------------------------ benchmark pages
    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return html(runs.runs_page(ws))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run(
        run_id: str, stage: str | None = None, sort: str | None = None, order: str = "asc"
    ) -> HTMLResponse:
        return html(runs.run_page(ws, run_id, stage or None, sort or None, order))

    @app.get("/runs/{run_id}/queries/{query_id}", response_class=HTMLResponse)
    def query(run_id: str, query_id: str) -> HTMLResponse:
        return html(runs.query_page(ws, run_id, query_id))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(base: str, cand: str) -> HTMLResponse:
        return html(runs.compare_page(ws, base.strip(), cand.strip()))

    @app.get("/api/runs")
    def api_runs() -> list[dict[str, Any]]:
        if not ws.db_path.exists():
            return []
        with ResultsDB(ws.db_path) as db:
            return [
                {"id": r.id, "name": r.name, "status": r.status, "error": r.error,
                 "created_at": r.created_at}
                for r in db.list_runs()
            ]  # fmt: skip

    # ------------------------------------------------------------ prompt lab pages
    @app.get("/prompts", response_class=HTMLResponse)
    def prompts_index() -> HTMLResponse:
        with store() as s:
            return html(lab.index_page(s))

    @app.get("/prompts/{uc}", response_class=HTMLResponse)
    def prompt_lab(uc: str) -> HTMLResponse:
        use_case = get_use_case(uc)
        with store() as s:
            return html(lab.lab_page(use_case, s))

    @app.get("/prompts/{uc}/runs/{run_id}/{prompt}", response_class=HTMLResponse)
    def prompt_detail(uc: str, run_id: str, prompt: str) -> HTMLResponse:
        use_case = get_use_case(uc)
        with store() as s:
            return html(lab.detail_page(use_case, s, run_id, prompt))

    # ------------------------------------------------------------ prompt lab API
    def _use_case(uc: str) -> UseCase:
        return get_use_case(uc)

    @app.get("/api/prompts/{uc}")
    def api_lab(uc: str) -> dict[str, Any]:
        use_case = _use_case(uc)
        with store() as s:
            from retrieval_bench.prompt_eval.io import ensure_examples

            ensure_examples(s, use_case)
            return {
                "use_case": use_case.name,
                "baseline": s.baseline(use_case.name),
                "rows": [_row_json(r) for r in s.rows(use_case.name)],
                "prompts": [_prompt_json(p) for p in s.prompts(use_case.name)],
            }

    @app.post("/api/prompts/{uc}/rows")
    async def api_save_row(uc: str, request: Request) -> Response:
        use_case = _use_case(uc)
        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        try:
            row = Row(
                id=str(data.get("id", "")).strip(),
                variables={str(k): str(v) for k, v in dict(data.get("variables") or {}).items()},
                expected={str(k): lab.decode_cell(v)
                          for k, v in dict(data.get("expected") or {}).items()},
                version=int(data.get("version") or 0),
            )  # fmt: skip
        except (TypeError, ValueError) as exc:
            return _error(400, f"row: {exc}")
        with store() as s:
            saved = s.save_row(use_case, row)
        return JSONResponse(_row_json(saved))

    @app.post("/api/prompts/{uc}/prompts")
    async def api_save_prompt(uc: str, request: Request) -> Response:
        use_case = _use_case(uc)
        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        params = data.get("parameters") or {}
        if isinstance(params, str):
            import json

            try:
                params = json.loads(params or "{}")
            except json.JSONDecodeError as exc:
                return _error(400, f"prompt parameters are not valid JSON: {exc.msg}")
        if not isinstance(params, dict):
            return _error(400, "prompt parameters must be a JSON object")
        prompt = Prompt(
            name=str(data.get("name", "")).strip(), user=str(data.get("user", "")),
            system=str(data.get("system", "")), model=str(data.get("model", "")).strip(),
            parameters=params, version=int(data.get("version") or 0),
        )  # fmt: skip
        with store() as s:
            saved = s.save_prompt(use_case, prompt)
        return JSONResponse(_prompt_json(saved))

    @app.post("/api/prompts/{uc}/run")
    async def api_run(uc: str, request: Request) -> Response:
        use_case = _use_case(uc)
        raw = await request.body()
        data = await _json_body(request) if raw.strip() else {}
        if isinstance(data, Response):
            return data
        only = [str(data["prompt"])] if data.get("prompt") else None
        with store() as s:
            for name in only or []:
                s.prompt(use_case.name, name)  # 404 before starting a job

        def work(job: Job) -> dict[str, Any]:
            from retrieval_bench.prompt_eval.runner import run_use_case

            def progress(name: str, fraction: float) -> None:
                job.progress, job.message = fraction, f"{name} done"

            with store() as s:
                result = run_use_case(use_case, provide_llm(), s, only=only, progress=progress)
            return {"run_id": result.run_id, "order": [r.name for r in result.results]}

        job = jobs.start("prompt-run", work)
        return JSONResponse(job.to_dict(), status_code=202)

    @app.get("/api/jobs/{job_id}")
    def api_job(job_id: str) -> Response:
        job = jobs.get(job_id)
        if job is None:
            return _error(404, f"no job {job_id!r} (jobs are forgotten when the server restarts)")
        return JSONResponse(job.to_dict())

    @app.get("/api/prompts/{uc}/export")
    def api_export(uc: str, kind: str = "rows", format: str = "json") -> Response:
        from retrieval_bench.prompt_eval.io import ensure_examples, export_prompts, export_rows

        use_case = _use_case(uc)
        if kind not in ("rows", "prompts"):
            return _error(400, f"unknown kind {kind!r}; use rows or prompts")
        with store() as s:
            ensure_examples(s, use_case)
            if kind == "rows":
                text = export_rows(use_case, s.rows(use_case.name), format)
            else:
                text = export_prompts(
                    use_case, s.prompts(use_case.name), format, s.baseline(use_case.name)
                )
        media = "text/csv" if format == "csv" else "application/json"
        filename = f"{use_case.name}.{kind}.{format}"
        headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
        return Response(text, media_type=media, headers=headers)

    @app.post("/api/prompts/{uc}/import")
    async def api_import(
        uc: str, request: Request, kind: str = "rows", filename: str = "upload.json",
        format: str | None = None, replace: bool = False,
    ) -> Response:  # fmt: skip
        from retrieval_bench.prompt_eval.io import import_file

        use_case = _use_case(uc)
        if kind not in ("rows", "prompts"):
            return _error(400, f"unknown kind {kind!r}; use rows or prompts")
        body = await request.body()
        name = Path(filename).name or "upload.json"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(body)
            try:
                with store() as s:
                    summary = import_file(s, use_case, path, kind, fmt=format, replace=replace)
            except (ImportFormatError, InvalidRowError, InvalidPromptError) as exc:
                return _error(400, str(exc).replace(str(path), name))
        return JSONResponse({"imported": str(summary)})

    return app


async def _json_body(request: Request) -> dict[str, Any] | Response:
    try:
        data = await request.json()
    except ValueError:
        return _error(400, "request body is not valid JSON")
    if not isinstance(data, dict):
        return _error(400, "request body must be a JSON object")
    return data


def _row_json(r: Row) -> dict[str, Any]:
    return {"id": r.id, "version": r.version, "variables": dict(r.variables),
            "expected": dict(r.expected)}  # fmt: skip


def _prompt_json(p: Prompt) -> dict[str, Any]:
    return {"name": p.name, "version": p.version, "user": p.user, "system": p.system,
            "model": p.model, "parameters": dict(p.parameters)}  # fmt: skip

"""The JSON API under ``/api/``: the stored runs, the prompt lab's reads and
edits (rows, prompts, import/export), prompt runs started as background jobs
and their progress. Errors are ``{"error": ...}`` with a fitting status
(:func:`retrieval_bench.web.errors.install`).

Every POST carries a JSON body (an import sends ``{"content": FILE_TEXT}``, the
file's name and kind in the query) and the server's token: :mod:`..guard`
refuses the rest before a route runs. Use cases are looked up by registered
name only (:func:`~retrieval_bench.prompt_eval.usecase.registered_use_case`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from retrieval_bench.prompt_eval.errors import (
    ImportFormatError,
    InvalidPromptError,
    InvalidRowError,
)
from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import registered_use_case
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.web import lab
from retrieval_bench.web.errors import json_error
from retrieval_bench.web.jobs import Job, JobRegistry
from retrieval_bench.workspace import Workspace


def router(ws: Workspace, provide_llm: Callable[[], Any], jobs: JobRegistry) -> APIRouter:
    """The API over ``ws``; prompt runs call the model ``provide_llm`` returns."""
    routes = APIRouter()

    @routes.get("/api/runs")
    def api_runs() -> list[dict[str, Any]]:
        if not ws.db_path.exists():
            return []
        with ResultsDB(ws.db_path) as db:
            return [
                {"id": r.id, "name": r.name, "status": r.status, "error": r.error,
                 "created_at": r.created_at}
                for r in db.list_runs()
            ]  # fmt: skip

    # ------------------------------------------------------------ prompt lab
    @routes.get("/api/prompts/{uc}")
    def api_lab(uc: str) -> dict[str, Any]:
        use_case = registered_use_case(uc)
        with PromptStore.for_workspace(ws) as s:
            from retrieval_bench.prompt_eval.io import ensure_examples

            ensure_examples(s, use_case)
            return {
                "use_case": use_case.name,
                "baseline": s.baseline(use_case.name),
                "rows": [_row_json(r) for r in s.rows(use_case.name)],
                "prompts": [_prompt_json(p) for p in s.prompts(use_case.name)],
            }

    @routes.post("/api/prompts/{uc}/rows")
    async def api_save_row(uc: str, request: Request) -> Response:
        use_case = registered_use_case(uc)
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
            return json_error(400, f"row: {exc}")
        with PromptStore.for_workspace(ws) as s:
            saved = s.save_row(use_case, row)
        return JSONResponse(_row_json(saved))

    @routes.post("/api/prompts/{uc}/prompts")
    async def api_save_prompt(uc: str, request: Request) -> Response:
        use_case = registered_use_case(uc)
        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        params = data.get("parameters") or {}
        if isinstance(params, str):
            try:
                params = json.loads(params or "{}")
            except json.JSONDecodeError as exc:
                return json_error(400, f"prompt parameters are not valid JSON: {exc.msg}")
        if not isinstance(params, dict):
            return json_error(400, "prompt parameters must be a JSON object")
        prompt = Prompt(
            name=str(data.get("name", "")).strip(), user=str(data.get("user", "")),
            system=str(data.get("system", "")), model=str(data.get("model", "")).strip(),
            parameters=params, version=int(data.get("version") or 0),
        )  # fmt: skip
        with PromptStore.for_workspace(ws) as s:
            saved = s.save_prompt(use_case, prompt)
        return JSONResponse(_prompt_json(saved))

    @routes.post("/api/prompts/{uc}/run")
    async def api_run(uc: str, request: Request) -> Response:
        use_case = registered_use_case(uc)
        raw = await request.body()
        data = await _json_body(request) if raw.strip() else {}
        if isinstance(data, Response):
            return data
        only = [str(data["prompt"])] if data.get("prompt") else None
        with PromptStore.for_workspace(ws) as s:
            for name in only or []:
                s.prompt(use_case.name, name)  # 404 before starting a job

        def work(job: Job) -> dict[str, Any]:
            from retrieval_bench.prompt_eval.runner import run_use_case

            def progress(name: str, fraction: float) -> None:
                job.progress, job.message = fraction, f"{name} done"

            with PromptStore.for_workspace(ws) as s:
                result = run_use_case(use_case, provide_llm(), s, only=only, progress=progress)
            return {"run_id": result.run_id, "order": [r.name for r in result.results]}

        job = jobs.start("prompt-run", work)
        return JSONResponse(job.to_dict(), status_code=202)

    @routes.get("/api/jobs/{job_id}")
    def api_job(job_id: str) -> Response:
        job = jobs.get(job_id)
        if job is None:
            why = "jobs are forgotten when the server restarts"
            return json_error(404, f"no job {job_id!r} ({why})")
        return JSONResponse(job.to_dict())

    @routes.get("/api/prompts/{uc}/export")
    def api_export(uc: str, kind: str = "rows", format: str = "json") -> Response:
        from retrieval_bench.prompt_eval.io import ensure_examples, export_prompts, export_rows

        use_case = registered_use_case(uc)
        if kind not in ("rows", "prompts"):
            return json_error(400, f"unknown kind {kind!r}; use rows or prompts")
        with PromptStore.for_workspace(ws) as s:
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

    @routes.post("/api/prompts/{uc}/import")
    async def api_import(
        uc: str, request: Request, kind: str = "rows", filename: str = "upload.json",
        format: str | None = None, replace: bool = False,
    ) -> Response:  # fmt: skip
        from retrieval_bench.prompt_eval.io import import_file

        use_case = registered_use_case(uc)
        if kind not in ("rows", "prompts"):
            return json_error(400, f"unknown kind {kind!r}; use rows or prompts")
        data = await _json_body(request)
        if isinstance(data, Response):
            return data
        content = data.get("content")
        if not isinstance(content, str):
            return json_error(400, 'import: send {"content": "<the file\'s text>"}')
        name = Path(filename).name or "upload.json"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(content.encode("utf-8"))
            try:
                with PromptStore.for_workspace(ws) as s:
                    summary = import_file(s, use_case, path, kind, fmt=format, replace=replace)
            except (ImportFormatError, InvalidRowError, InvalidPromptError) as exc:
                return json_error(400, str(exc).replace(str(path), name))
        return JSONResponse({"imported": str(summary)})

    return routes


async def _json_body(request: Request) -> dict[str, Any] | Response:
    try:
        data = await request.json()
    except ValueError:
        return json_error(400, "request body is not valid JSON")
    if not isinstance(data, dict):
        return json_error(400, "request body must be a JSON object")
    return data


def _row_json(r: Row) -> dict[str, Any]:
    return {"id": r.id, "version": r.version, "variables": dict(r.variables),
            "expected": dict(r.expected)}  # fmt: skip


def _prompt_json(p: Prompt) -> dict[str, Any]:
    return {"name": p.name, "version": p.version, "user": p.user, "system": p.system,
            "model": p.model, "parameters": dict(p.parameters)}  # fmt: skip

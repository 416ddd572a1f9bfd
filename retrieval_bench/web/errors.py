"""What the web UI shows when a page cannot be made: a readable page (or, under
``/api/``, a JSON ``{"error": ...}``) saying what failed, the file involved and
what to do, with a status code that fits — never a bare "Internal Server Error".

:func:`describe` sorts an exception into one of these cases:

* an unknown run, stage, query or use case → 404;
* a refused stale edit → 409; other bad requests (a comparison the runs do not
  allow, an invalid row) → 400;
* a damaged results database (truncated, overwritten) → 503, naming the file and
  ``rbench runs --rebuild-db``;
* a damaged file of a run's results folder → 500, naming the file and line;
* anything else → 500 with the exception's type and message.

:func:`install` adds the handlers that answer every error of the app this way
(and HTTP errors and malformed query parameters too).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from retrieval_bench.errors import ConfigError, DatasetError, RBenchError
from retrieval_bench.prompt_eval.errors import (
    NotFoundError,
    PromptEvalError,
    StaleWriteError,
    UnknownUseCaseError,
)
from retrieval_bench.store.corrupt import CorruptDBError, is_corrupt
from retrieval_bench.store.db import ResultsDBError, UnknownRunError
from retrieval_bench.web.html import error_page
from retrieval_bench.web.rundata import PageNotFoundError, ResultsFileError
from retrieval_bench.workspace import Workspace

__all__ = ["Failure", "describe", "install", "json_error", "render"]

REBUILD = "rbench runs --rebuild-db"


@dataclass(frozen=True)
class Failure:
    """An exception, sorted: status code, page title, what failed, file, what to do."""

    status: int
    title: str
    what: str
    file: str | None = None
    todo: list[str] = field(default_factory=list)


def _damaged_db(exc: BaseException) -> bool:
    """A damaged SQLite file, raised as such or as the cause of another error."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CorruptDBError) or is_corrupt(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def describe(exc: BaseException, ws: Workspace, request: str) -> Failure:
    """Sort ``exc`` (raised while answering ``request``, e.g. ``GET /runs/x``)."""
    db = str(ws.db_path)
    if _damaged_db(exc):
        return Failure(
            503, "Results database cannot be read",
            f"{request} needs the results database, and it cannot be read: {exc}",
            db,
            [f"Run `{REBUILD}`: it moves the damaged file aside (kept for inspection) and "
             f"rebuilds the database from the run folders in {ws.results_dir}.",
             "Then reload this page."],
        )  # fmt: skip
    if isinstance(exc, UnknownRunError):
        todo = ["Pick a run on the Runs page, or list them with `rbench runs`."]
        return Failure(404, "Run not found", str(exc), db, todo)
    if isinstance(exc, PageNotFoundError | NotFoundError | UnknownUseCaseError):
        return Failure(404, "Not found", str(exc), None,
                       ["Check the address; follow the links from the Runs page or the "
                        "Prompt lab instead."])  # fmt: skip
    if isinstance(exc, StaleWriteError):
        return Failure(409, "Not saved", str(exc), None,
                       ["Reload the page to see the newer version, then edit again."])  # fmt: skip
    if isinstance(exc, ResultsFileError):
        return Failure(
            500, "A results file cannot be read", str(exc), str(exc.path),
            ["The file was damaged or cut short (a full disk, an interrupted copy). "
             "Run the benchmark again to write a new results folder, or restore the file.",
             "Other runs are not affected."],
        )  # fmt: skip
    if isinstance(exc, ResultsDBError | sqlite3.Error):
        return Failure(503, "Results database error", f"{request}: {exc}", db,
                       ["Check that the file is readable and not locked by another program, "
                        f"then reload; if it stays broken, run `{REBUILD}`."])  # fmt: skip
    if isinstance(exc, ConfigError | DatasetError | PromptEvalError):
        return Failure(400, "Cannot do that", str(exc), None,
                       ["Change the request as the message says (e.g. compare stages both "
                        "runs have, with RUN:STAGE)."])  # fmt: skip
    if isinstance(exc, OSError):
        return Failure(500, "A file cannot be read", f"{request}: {exc.strerror or exc}",
                       exc.filename if isinstance(exc.filename, str) else None,
                       ["Check that the file exists and is readable, then reload."])  # fmt: skip
    message = str(exc) if isinstance(exc, RBenchError) else f"{type(exc).__name__}: {exc}"
    return Failure(500, "Internal error", f"{request} failed: {message}", None,
                   ["Reload the page; if it fails again, report it with the address and the "
                    "traceback from the terminal that runs `rbench serve`."])  # fmt: skip


def render(failure: Failure) -> str:
    """The HTML page of a failure."""
    return error_page(failure.title, failure.what, failure.todo, failure.file)


def json_error(status: int, message: str) -> JSONResponse:
    """An API error: ``{"error": message}`` with ``status``."""
    return JSONResponse({"error": message}, status_code=status)


def install(app: FastAPI, ws: Workspace) -> None:
    """Answer every error of ``app`` with a readable page (JSON under ``/api/``)."""

    async def failure(request: Request, exc: Exception) -> Response:
        """Any error of a route, sorted by :func:`describe`."""
        what = describe(exc, ws, f"{request.method} {request.url.path}")
        if request.url.path.startswith("/api/"):
            message = what.what if what.file is None or what.file in what.what else (
                f"{what.what} ({what.file})")  # fmt: skip
            return json_error(what.status, message)
        return HTMLResponse(render(what), status_code=what.status)

    # our own errors, SQLite's and file errors are answered here; anything else
    # reaches the catch-all (Starlette then also logs its traceback)
    for kind in (RBenchError, sqlite3.Error, OSError, Exception):
        app.add_exception_handler(kind, failure)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return json_error(exc.status_code, str(exc.detail))
        title = "Not found" if exc.status_code == 404 else f"Error {exc.status_code}"
        todo = ["Follow the links from the Runs page or the Prompt lab."]
        text = f"{request.method} {request.url.path}: {exc.detail}"
        return HTMLResponse(render(Failure(exc.status_code, title, text, None, todo)),
                            status_code=exc.status_code)  # fmt: skip

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
        return HTMLResponse(render(Failure(400, "Bad request", text, None, todo)), status_code=400)

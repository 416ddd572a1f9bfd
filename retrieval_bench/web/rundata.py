"""What the benchmark pages read from a stored run: the results database, the
run's ``queries.jsonl``, its links; and the errors a page raises when the run
lacks something or a results file is damaged (:mod:`retrieval_bench.web.errors`
renders them as a page naming the file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from retrieval_bench.errors import RBenchError
from retrieval_bench.store.db import ResultsDB, RunRecord
from retrieval_bench.store.run_folder import QUERIES_FILE, ResultsFileError
from retrieval_bench.store.run_folder import read_queries as read_run_queries
from retrieval_bench.store.stored_config import StoredConfig
from retrieval_bench.workspace import Workspace

__all__ = [
    "PageNotFoundError",
    "ResultsFileError",
    "dataset_key",
    "dataset_names",
    "href",
    "open_db",
    "query_href",
    "read_queries",
    "run_dir",
    "run_href",
    "table_k",
]


class PageNotFoundError(RBenchError):
    """The page asks for something the run does not have (a stage, a query)."""


@contextmanager
def open_db(ws: Workspace) -> Iterator[ResultsDB]:
    """The workspace's results database, closed on leaving."""
    db = ResultsDB(ws.db_path)
    try:
        yield db
    finally:
        db.close()


def run_dir(ws: Workspace, run_id: str) -> Path:
    """``results/<run_id>/``."""
    return Path(ws.results_dir) / run_id


def href(path: str, **params: str) -> str:
    """``path?k=v&...`` with the non-empty ``params``."""
    query = urlencode({k: v for k, v in params.items() if v})
    return f"{path}?{query}" if query else path


def run_href(run_id: str) -> str:
    """The address of a run's page."""
    return f"/runs/{quote(run_id, safe='')}"


def query_href(run_id: str, query_id: str) -> str:
    """The address of a query's drill-down; the id is quoted whole (``/``, ``%``,
    ``#``, ``?``, spaces, unicode) and the route takes it back as a path parameter."""
    return f"{run_href(run_id)}/queries/{quote(query_id, safe='')}"


def dataset_key(run: RunRecord) -> str | None:
    """What a run was measured on: its dataset fingerprint, else its dataset names
    (None when neither is known). Only runs with equal keys are comparable."""
    if run.dataset_fingerprint:
        return f"fingerprint:{run.dataset_fingerprint}"
    names = dataset_names(run)
    return f"names:{','.join(sorted(names))}" if names else None


def dataset_names(run: RunRecord) -> list[str]:
    """The names of the datasets in the run's config."""
    return StoredConfig.of(run.config).dataset_names


def table_k(config: Mapping[str, Any]) -> int:
    """The cut-off the run's tables show (the config's ``table_k``, by default
    :data:`~retrieval_bench.config_defaults.TABLE_K`, as ``rbench show``)."""
    return StoredConfig.of(config).table_k


def read_queries(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    """The run's ``queries.jsonl`` (empty when absent); :class:`ResultsFileError`
    naming the file and line when it cannot be read
    (:func:`retrieval_bench.store.run_folder.read_queries`)."""
    folder = run_dir(ws, run_id)
    if not (folder / QUERIES_FILE).exists():
        return []
    return read_run_queries(folder)

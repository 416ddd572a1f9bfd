"""``results/<run-id>/run.json``: a run's database rows, kept next to its results.

The results database is the index that ``rbench runs``/``show``/``compare``
and the web UI read; the run folder is the record. So that a lost or damaged
database can be rebuilt from the folders (:mod:`retrieval_bench.store.rebuild`),
every run writes ``run.json`` when it starts (status ``running``, its owner
process) and again when it ends: the ``runs`` row (status, failure reason,
timings, config, provenance), each stage's info, its aggregate metrics per
subset in recorded order, its failures, and the per-query metrics of the
stages whose rows are not already in ``query_metrics.jsonl`` (the answer
stage). NaN metric values are written as ``null``, as the database stores them.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.io import write_text_atomically

__all__ = ["RUN_FILE", "export_run", "import_run", "query_metric_rows", "save_run_file"]

log = logging.getLogger(__name__)

RUN_FILE = "run.json"
FORMAT = 1

QueryRow = tuple[str, str, str, float | None]
"""(stage, query id, metric, value) of one per-query metric."""


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def export_run(
    db: ResultsDB, run_id: str, per_query_elsewhere: Collection[str] = ()
) -> dict[str, Any]:
    """Everything the database holds for ``run_id`` as JSON-ready data; per-query
    metrics of the stages in ``per_query_elsewhere`` are left out (they are in
    ``query_metrics.jsonl``)."""
    run = db.get_run(run_id)
    info = db.query(
        "SELECT stage, parent, seconds, llm_calls, llm_tokens, n_failures, position "
        "FROM stage_info WHERE run_id = ? ORDER BY position",
        (run_id,),
    )
    metrics: dict[str, dict[str, dict[str, float | None]]] = {}
    for stage, subset, metric, value in db.query(
        "SELECT stage, subset, metric, value FROM stage_metrics WHERE run_id = ? ORDER BY rowid",
        (run_id,),
    ):
        metrics.setdefault(stage, {}).setdefault(subset, {})[metric] = value
    failures: dict[str, dict[str, str]] = {}
    for stage, qid, reason in db.failures(run_id):
        failures.setdefault(stage, {})[qid] = reason
    per_query: dict[str, dict[str, dict[str, float | None]]] = {}
    for stage, qid, metric, value in db.query(
        "SELECT stage, query_id, metric, value FROM query_metrics WHERE run_id = ?", (run_id,)
    ):
        if stage not in per_query_elsewhere:
            per_query.setdefault(stage, {}).setdefault(qid, {})[metric] = value
    stages = [
        {
            "stage": stage,
            "parent": parent,
            "seconds": seconds,
            "llm_calls": calls,
            "llm_tokens": tokens,
            "n_failures": n_failures,
            "position": position,
            "metrics": metrics.pop(stage, {}),
            "failures": failures.get(stage, {}),
        }
        for stage, parent, seconds, calls, tokens, n_failures, position in info
    ]
    return {
        "format": FORMAT,
        "run": {
            "id": run.id,
            "name": run.name,
            "created_at": run.created_at,
            "finished_at": run.finished_at,
            "status": run.status,
            "error": run.error,
            "owner": run.owner,
            "config": run.config,
            "provenance": run.provenance,
            "dataset_fingerprint": run.dataset_fingerprint,
            "timings": run.timings,
            "notes": run.notes,
        },
        "stages": stages,
        "orphan_metrics": metrics,  # stage metrics without stage info (not written by the harness)
        "query_metrics": per_query,
    }


def save_run_file(
    db: ResultsDB, run_id: str, folder: Path, per_query_elsewhere: Collection[str] = ()
) -> Path | None:
    """Write ``folder/run.json`` from the database, atomically (a reader never sees
    half a file, a killed write leaves the previous one); a failure to write is logged, not
    raised (the run itself is stored; only a later rebuild would miss it)."""
    try:
        data = export_run(db, run_id, per_query_elsewhere)
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(folder / RUN_FILE, json.dumps(data, indent=1, default=str))
    except OSError as exc:
        log.warning("could not write %s: %s", folder / RUN_FILE, exc)
        return None
    return folder / RUN_FILE


def query_metric_rows(path: Path) -> Iterable[QueryRow]:
    """The rows of a run's ``query_metrics.jsonl`` (dataset, stage, query_id, metrics)."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                for metric, value in rec["metrics"].items():
                    yield rec["stage"], rec["query_id"], metric, _num(value)


def import_run(db: ResultsDB, data: Mapping[str, Any], query_rows: Iterable[QueryRow] = ()) -> bool:
    """Insert a run exported by :func:`export_run` (plus per-query ``query_rows``, e.g.
    from ``query_metrics.jsonl``) in one transaction; False when the id is already stored."""
    run = data["run"]
    if db.query("SELECT 1 FROM runs WHERE id = ?", (run["id"],)):
        return False
    with db.transaction() as c:
        c.execute(
            "INSERT INTO runs (id, name, created_at, finished_at, status, config_json, "
            "provenance_json, dataset_fingerprint, timings_json, notes, error, owner_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run["id"],
                run["name"],
                run["created_at"],
                run.get("finished_at"),
                run["status"],
                json.dumps(run.get("config") or {}, sort_keys=True, default=str),
                json.dumps(run.get("provenance") or {}, sort_keys=True, default=str),
                run.get("dataset_fingerprint"),
                json.dumps(run.get("timings") or {}, default=str),
                run.get("notes"),
                run.get("error"),
                json.dumps(run["owner"]) if run.get("owner") else None,
            ),
        )
        rid = run["id"]
        for pos, st in enumerate(data.get("stages", [])):
            c.execute(
                "INSERT INTO stage_info (run_id, stage, parent, seconds, llm_calls, llm_tokens, "
                "n_failures, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    st["stage"],
                    st.get("parent"),
                    st.get("seconds", 0.0),
                    st.get("llm_calls", 0),
                    st.get("llm_tokens", 0),
                    st.get("n_failures", len(st.get("failures", {}))),
                    st.get("position", pos),
                ),
            )
        all_metrics = [(st["stage"], st.get("metrics", {})) for st in data.get("stages", [])]
        all_metrics += list(data.get("orphan_metrics", {}).items())
        c.executemany(
            "INSERT OR REPLACE INTO stage_metrics (run_id, stage, subset, metric, value) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (rid, stage, subset, metric, _num(value))
                for stage, subsets in all_metrics
                for subset, values in subsets.items()
                for metric, value in values.items()
            ],
        )
        c.executemany(
            "INSERT OR REPLACE INTO failures (run_id, stage, query_id, reason) VALUES (?, ?, ?, ?)",
            [
                (rid, st["stage"], qid, reason)
                for st in data.get("stages", [])
                for qid, reason in st.get("failures", {}).items()
            ],
        )
        embedded: list[QueryRow] = [
            (stage, qid, metric, _num(value))
            for stage, queries in data.get("query_metrics", {}).items()
            for qid, values in queries.items()
            for metric, value in values.items()
        ]
        sql = (
            "INSERT OR REPLACE INTO query_metrics (run_id, stage, query_id, metric, value) "
            "VALUES (?, ?, ?, ?, ?)"
        )
        c.executemany(sql, ((rid, *row) for row in query_rows))
        c.executemany(sql, ((rid, *row) for row in embedded))
    return True

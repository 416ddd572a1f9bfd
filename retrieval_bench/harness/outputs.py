"""A benchmark run's folder, ``<workspace>/results/<run-id>/``
(docs/architecture.md#the-run-folder).

``config.json`` (resolved config + provenance), ``query_metrics.jsonl``,
``queries.jsonl`` (the per-query drill-down), ``threshold_sweeps.json``,
``answers.jsonl``, ``artifacts/<dataset>/<stage>.jsonl`` and one TREC file
per dataset and stage, ``runs/<dataset>/<stage>.trec``. ``run.json`` is
written separately (:mod:`retrieval_bench.store.runfile`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from retrieval_bench.harness.answer_records import write_answers
from retrieval_bench.harness.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.metrics.retrieval.scoring import ranked_files
from retrieval_bench.store.trec import write_run


def write_outputs(result: BenchmarkResult, out_dir: Path, prov: dict[str, Any]) -> None:
    """Write every file of the run folder but ``run.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(
        json.dumps({"config": result.config.model_dump(mode="json"), "provenance": prov}, indent=2)
    )
    with (out_dir / "query_metrics.jsonl").open("w") as fh:
        for o in result.outcomes:
            for stage_name, rows in o.per_query.items():
                for qid, metrics in rows.items():
                    rec = {"dataset": o.prepared.spec.name, "stage": stage_name, "query_id": qid}
                    fh.write(json.dumps({**rec, "metrics": metrics}) + "\n")
    if result.sweeps:
        (out_dir / "threshold_sweeps.json").write_text(json.dumps(result.sweeps, indent=2))
    if result.answer_stage is not None:
        write_answers(out_dir / "answers.jsonl", result.answer_stage)
    with (out_dir / "queries.jsonl").open("w") as fh:
        for o in result.outcomes:
            _write_drill_down(fh, o, result.config.table_k)
    for o in result.outcomes:
        _write_artifacts(out_dir / "artifacts" / o.prepared.spec.name, o)
    for o in result.outcomes:
        ds_dir = out_dir / "runs" / o.prepared.spec.name
        ds_dir.mkdir(parents=True, exist_ok=True)
        for stage in o.stages:
            write_run(ds_dir / f"{stage.name}.trec", stage.run)


def _write_drill_down(fh: IO[str], o: DatasetOutcome, k: int) -> None:
    """One ``queries.jsonl`` line per question of the dataset: its gold, missing
    gold with reasons, and per stage the top ``k`` files, lost files and failure."""
    corpus = o.prepared.corpus
    for ex in o.prepared.examples:
        stages = {
            s.name: {
                "files": ranked_files(s.run.ids(ex.id), corpus)[:k],
                "lost": o.lost.get(s.name, {}).get(ex.id, []),
                "failed": s.failures.get(ex.id),
            }
            for s in o.stages
        }
        drill = {
            "dataset": o.prepared.spec.name,
            "query_id": ex.id,
            "query": ex.query,
            "gold_files": list(ex.gold_files),
            "missing_gold": o.prepared.missing_gold.get(ex.id, []),
            "missing_gold_reasons": {
                p: o.prepared.missing_reasons.get(p, "not in the snapshot")
                for p in o.prepared.missing_gold.get(ex.id, [])
            },
            "stages": stages,
        }
        fh.write(json.dumps(drill) + "\n")


def _write_artifacts(folder: Path, o: DatasetOutcome) -> None:
    """``<stage>.jsonl`` per stage with artifacts or failures: per query, what it
    produced besides scores and why it failed."""
    for stage in o.stages:
        if stage.artifacts or stage.failures:
            art = folder / f"{stage.name}.jsonl"
            art.parent.mkdir(parents=True, exist_ok=True)
            with art.open("w") as fh:
                for qid in sorted(set(stage.artifacts) | set(stage.failures)):
                    art_rec: dict[str, Any] = {
                        "query_id": qid,
                        "artifact": stage.artifacts.get(qid),
                    }
                    if qid in stage.failures:
                        art_rec["failed"] = stage.failures[qid]
                    fh.write(json.dumps(art_rec, default=str) + "\n")

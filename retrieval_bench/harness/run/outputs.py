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
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from retrieval_bench.datasets.jsonl import question_fingerprint
from retrieval_bench.harness.answers.records import write_answers
from retrieval_bench.harness.run.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.harness.run.snapshot_work import input_stages
from retrieval_bench.identifiers import inside
from retrieval_bench.runs.lifting import ranked_files
from retrieval_bench.store.trec import write_run
from retrieval_bench.types import StageResult


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
        _write_artifacts(out_dir / "artifacts", o)
    for o in result.outcomes:
        ds_dir = inside(out_dir / "runs", o.prepared.spec.name)
        ds_dir.mkdir(parents=True, exist_ok=True)
        for stage in o.stages:
            write_run(inside(ds_dir, stage.name, suffix=".trec"), stage.run)


def _write_drill_down(fh: IO[str], o: DatasetOutcome, k: int) -> None:
    """One ``queries.jsonl`` line per question of the dataset: its gold, missing
    gold with reasons, why it could not be run (``not_run``, when so), and per stage
    the top ``k`` files, lost files with their ranks (``lost_ranks``) and failure."""
    corpus = o.prepared.corpus
    for ex in o.prepared.examples:
        stages: dict[str, dict[str, Any]] = {}
        for s in o.stages:
            ranked = ranked_files(s.run.ids(ex.id), corpus)
            lost = o.lost.get(s.name, {}).get(ex.id, [])
            stages[s.name] = {"files": ranked[:k], "lost": lost, "failed": s.failures.get(ex.id)}
            if lost:
                stages[s.name]["lost_ranks"] = _lost_ranks(lost, ranked, s, o, ex.id)
        drill: dict[str, Any] = {
            "dataset": o.prepared.spec.name,
            "query_id": ex.id,
            "query": ex.query,
            "question_fingerprint": question_fingerprint(ex),
            "gold_files": list(ex.gold_files),
            "missing_gold": o.prepared.missing_gold.get(ex.id, []),
            "missing_gold_reasons": {
                p: o.prepared.missing_reasons.get(p, "not in the snapshot")
                for p in o.prepared.missing_gold.get(ex.id, [])
            },
            "stages": stages,
        }
        if ex.id in o.prepared.failed_questions:
            drill["not_run"] = o.prepared.failed_questions[ex.id]
        fh.write(json.dumps(drill) + "\n")


def _lost_ranks(
    lost: Sequence[str], ranked: Sequence[str], stage: StageResult, o: DatasetOutcome, qid: str
) -> dict[str, dict[str, Any]]:
    """Per lost gold file, its rank in the stage's own full list (``here``; None: not
    ranked) and in each input stage that ranked it (``input``: stage → rank; empty
    for a retriever, whose input is the snapshot). Ranks count from 1."""
    inputs = [
        (s.name, ranked_files(s.run.ids(qid), o.prepared.corpus))
        for s in input_stages(stage, o.stages) or []
    ]
    out: dict[str, dict[str, Any]] = {}
    for f in lost:
        here = ranked.index(f) + 1 if f in ranked else None
        fed = {name: files.index(f) + 1 for name, files in inputs if f in files}
        out[f] = {"here": here, "input": fed}
    return out


def _write_artifacts(folder: Path, o: DatasetOutcome) -> None:
    """``<dataset>/<stage>.jsonl`` under ``folder`` per stage with artifacts or failures:
    per query, what it produced besides scores and why it failed."""
    for stage in o.stages:
        if stage.artifacts or stage.failures:
            art = inside(folder, o.prepared.spec.name, stage.name, suffix=".jsonl")
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

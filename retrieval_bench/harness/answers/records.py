"""The answer stage's records: its row in the results database and
``answers.jsonl`` in the run folder (step 3 of :mod:`retrieval_bench.harness.answers.dataset`).

Stored as ``rbench eval`` stores a run (metric means under subset ``all``,
per-query values with missing ones as NULL, failures), so ``rbench compare
RUN_A:answer RUN_B:answer`` works across benchmark and eval runs; the rows of
``answers.jsonl`` are what ``rbench eval`` reads back as predictions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_bench.answering.answerer import Answer, AnswerFailure, linked_text
from retrieval_bench.config import ANSWER_STAGE
from retrieval_bench.harness.answers.dataset import AnswerSection
from retrieval_bench.metrics.answer.evaluator import nan_if_missing
from retrieval_bench.store.db import ResultsDB

__all__ = ["answer_rows", "stage_metrics", "store_answers", "write_answers"]


def stage_metrics(section: AnswerSection) -> dict[str, float]:
    """The ``answer`` stage's row: each metric's mean and CI (``_ci_low``/``_ci_high``),
    corpus scores (``_corpus``), the share of failed answers, time and LLM use."""
    ev = section.evaluation
    row: dict[str, float] = {}
    for m in ev.metric_names:
        a = ev.aggregates[m]
        row[m] = nan_if_missing(a.mean)
        row[f"{m}_ci_low"] = nan_if_missing(a.ci_low)
        row[f"{m}_ci_high"] = nan_if_missing(a.ci_high)
    row.update({f"{m}_corpus": v for m, v in ev.corpus.items()})
    n = len(section.outcomes)
    n_failed = sum(isinstance(a, AnswerFailure) for _, a in section.outcomes)
    row["failed"] = n_failed / n if n else 0.0
    llm = section.llm_stats()
    row["seconds"] = section.seconds
    row["llm_calls"] = float(llm["calls"])
    row["llm_cache_hits"] = float(llm["cache_hits"])
    return row


def store_answers(db: ResultsDB, run_id: str, section: AnswerSection) -> None:
    """Stage ``answer``: means + CIs (subset ``all``), per-query values, failures, LLM use."""
    llm = section.llm_stats()
    db.record_stage(
        run_id,
        ANSWER_STAGE,
        {"all": stage_metrics(section)},
        parent=section.input,
        seconds=section.seconds,
        llm_calls=llm["calls"],
        llm_tokens=llm["tokens"],
        failures=section.failures(),
    )
    db.record_query_metrics(run_id, ANSWER_STAGE, section.evaluation.stored_values())


def answer_rows(section: AnswerSection) -> list[dict[str, Any]]:
    """One JSON-ready row per question (see the module docstring for the keys)."""
    ev = section.evaluation
    index = {sid: i for i, sid in enumerate(ev.sample_ids)}
    rows = []
    for d in section.datasets:
        for ex, a in zip(d.examples, d.answers, strict=True):
            sid = section.sample_ids[(d.dataset, ex.id)]
            i = index[sid]
            scores = {m: ev.scores[m][i] for m in ev.metric_names}
            row: dict[str, Any] = {
                "dataset": d.dataset,
                "query_id": ex.id,
                "question": ex.query,
                "reference_answer": ex.reference_answer,
                "gold_files": list(ex.gold_files),
                "repo": str(d.root),
                "rung": a.rung,
                "input_stage": section.input,
                "answer": a.text if isinstance(a, Answer) else None,
                "answer_linked": linked_text(a, d.root) if isinstance(a, Answer) else None,
                "failed": a.error if isinstance(a, AnswerFailure) else None,
                "chunks": [
                    {"id": c.id, "path": c.path, "start_line": c.start_line, "end_line": c.end_line}
                    for c in d.chunks.get(ex.id, [])
                ],
                "contexts": [c.text for c in d.chunks.get(ex.id, [])],
                "metrics": {m: s.value for m, s in scores.items()},
                "metric_errors": {m: s.error for m, s in scores.items() if s.value is None},
            }
            if isinstance(a, Answer):
                row["code_references"] = [r.to_dict() for r in a.references]
                row["dropped_chunk_ids"] = list(a.dropped_chunk_ids)
                row["context_tokens"] = a.context_tokens
                row["prompt_tokens"] = a.prompt_tokens
                row["completion_tokens"] = a.completion_tokens
                row["cached"] = a.cached
                row["finish_reason"] = a.finish_reason
            rows.append(row)
    return rows


def write_answers(path: Path, section: AnswerSection) -> None:
    """``answers.jsonl``: :func:`answer_rows`, one JSON object per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in answer_rows(section):
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

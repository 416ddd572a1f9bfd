"""A finished benchmark run into the results database
(docs/architecture.md#the-sqlite-results-database).

Per stage its info row (parent, seconds, LLM use, failures), its aggregate
metrics per subset and its per-query metrics; the answer stage; the final
provenance; and the timings the run is finished with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_bench.harness.answers.records import store_answers
from retrieval_bench.harness.run.prepare import PreparedDataset
from retrieval_bench.harness.run.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.store.db import ResultsDB


def record_results(
    db: ResultsDB,
    result: BenchmarkResult,
    prov: dict[str, Any],
    prepared: Sequence[PreparedDataset],
) -> dict[str, float]:
    """Store every stage's rows, the answers and the provenance; returns the run's
    timings (``total`` and per snapshot, index, stage and model load)."""
    run_id, outcomes = result.run_id, result.outcomes
    for stage in result.stage_order:
        results = [s for o in outcomes for s in o.stages if s.name == stage]
        db.record_stage(
            run_id,
            stage,
            {sub: t[stage] for sub, t in result.tables.items() if stage in t},
            parent=results[0].parent if results else None,
            seconds=sum(s.seconds for s in results),
            llm_calls=sum(s.llm_calls for s in results),
            llm_tokens=sum(s.llm_tokens for s in results),
            failures={q: r for s in results for q, r in s.failures.items()},
        )
        merged = {q: m for o in outcomes for q, m in o.per_query.get(stage, {}).items()}
        db.record_query_metrics(run_id, stage, merged)
    if result.answer_stage is not None:
        store_answers(db, run_id, result.answer_stage)
    db.update_provenance(run_id, prov)  # the LLM (if any) is known only once it was used
    timings = _timings(prepared, outcomes)
    timings.update({f"load:{name}": sec for name, sec in result.loads.items()})
    if result.answer_stage is not None:
        timings["stage:answer"] = result.answer_stage.seconds
    return {"total": result.seconds, **timings}


def _timings(
    prepared: Sequence[PreparedDataset], outcomes: Sequence[DatasetOutcome]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in prepared:
        for key, sec in p.timings.items():
            out[key] = out.get(key, 0.0) + sec
    for o in outcomes:
        for s in o.stages:
            out[f"stage:{s.name}"] = out.get(f"stage:{s.name}", 0.0) + s.seconds
    return out

"""Score any predictions file with any metric set (``rbench eval``, printed by
:mod:`retrieval_bench.cli.eval`).

Usable without the retrieval pipeline: the rows only need a prediction and
(usually) a reference, under any of the field names
:mod:`retrieval_bench.metrics.answer.samples` accepts. Metrics come from ``--metric``
(``NAME`` or ``NAME:key=value,...``, repeatable) and/or ``--config`` (an
``answer_metrics:`` list, composites included, plus an optional ``llm:``
section); without either, the default text metrics run. The model client is
built only when a metric asks for one.

Like a benchmark run (:mod:`retrieval_bench.harness.run.runner`), an evaluation is
stored — a run in the SQLite results database with one stage, ``answer``,
holding the metric means and the per-sample values (missing ones as NULL), and
``results/<run-id>/`` with ``config.json`` (with provenance), ``scores.jsonl``
and ``summary.json`` — so two evaluations compare with ``rbench compare``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.config import load_metric_specs
from retrieval_bench.contracts.answer_metric import Metric, Sample
from retrieval_bench.errors import ConfigError, DatasetError
from retrieval_bench.llm.base import LLM
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.metrics.answer.evaluator import EvaluationResult, Evaluator, nan_if_missing
from retrieval_bench.metrics.answer.factory import (
    DEFAULT_TEXT_METRICS,
    as_spec,
    build_metrics,
)
from retrieval_bench.metrics.answer.samples import load_samples
from retrieval_bench.specs import MetricSpec
from retrieval_bench.store.db import ResultsDB, failure_reason
from retrieval_bench.store.provenance import provenance
from retrieval_bench.store.runfile import save_run_file
from retrieval_bench.version import __version__
from retrieval_bench.workspace import Workspace

STAGE = "answer"
TRACKED_DISTRIBUTIONS = (
    "retrieval-bench",
    "numpy",
    "scipy",
    "sacrebleu",
    "rouge-score",
    "openai",
)


@dataclass
class EvalOutcome:
    """What one evaluation of a predictions file produced."""

    path: Path
    name: str
    result: EvaluationResult
    reports: dict[str, Any]
    """Metric label → consistency report (only with ``consistency >= 2``)."""
    row_errors: list[Any]
    run_id: str | None
    out_dir: Path | None


def evaluate_predictions(
    predictions: str | Path,
    ws: Workspace,
    *,
    metrics: Sequence[str] | None = None,
    config: str | None = None,
    name: str | None = None,
    store_run: bool = True,
    consistency: int = 0,
) -> EvalOutcome:
    """Score a predictions JSONL (``rbench eval`` without the printing).

    ``metrics`` are ``NAME`` / ``NAME:key=value,...`` strings, ``config`` a file
    with ``answer_metrics:`` (and ``llm:``); raises DatasetError / ConfigError on
    bad input. Bad rows are kept in ``row_errors``; the rest are scored.
    """
    path = Path(predictions)
    samples, row_errors = load_samples(path)
    if not samples:
        bad = f" ({len(row_errors)} bad rows; first: {row_errors[0]})" if row_errors else ""
        raise DatasetError(
            f"{path}: no valid prediction rows{bad}; each line must be a JSON object with a "
            "'prediction' (or answer/output/response) and a 'reference'"
        )
    if consistency < 0 or consistency == 1:
        raise ConfigError(
            f"--consistency needs at least 2 repeats (0 for no check), got {consistency}"
        )
    specs, llm_spec = metric_specs(metrics, config)
    llm = _lazy_llm(llm_spec, ws)
    built = build(specs, llm)

    prov = provenance(
        TRACKED_DISTRIBUTIONS,
        dataset_fingerprint=file_fingerprint(path),
        repo_path=Path(__file__).resolve().parents[1],  # the package folder
        retrieval_bench=__version__,
    )
    run_config = {
        "kind": "eval",
        "predictions": str(path.resolve()),
        "metrics": [_spec_dict(s) for s in specs],
        "llm": llm_spec.model_dump(mode="json") if llm_spec is not None else None,
        "n_samples": len(samples),
        "row_errors": [str(e) for e in row_errors],
    }
    label = name or path.name
    db = ResultsDB(ws.db_path) if store_run else None
    run_id = (
        db.start_run(label, run_config, prov, dataset_fingerprint=prov["dataset_fingerprint"])
        if db is not None
        else None
    )
    started = time.perf_counter()
    out_dir = ws.results_dir / run_id if run_id is not None else None
    if db is not None and run_id is not None and out_dir is not None:
        save_run_file(db, run_id, out_dir)  # a killed run is still found by --rebuild-db
    try:
        result = evaluator(built).run(samples)
        reports = consistency_reports(built, samples, consistency)
        if llm.made is not None:
            prov["models"] = {"llm": llm.made.model}
        if db is not None and run_id is not None and out_dir is not None:
            store(db, run_id, result, llm.made, prov)
            write_results(out_dir, run_config, prov, result, reports)
            failed = "every sample failed on every metric" if result.all_failed else None
            db.finish_run(
                run_id, "failed" if failed else "done", {"total": result.seconds}, error=failed
            )
    except BaseException as exc:
        if db is not None and run_id is not None and out_dir is not None:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            total = {"total": time.perf_counter() - started}
            db.finish_run(run_id, status, total, error=failure_reason(exc))
            save_run_file(db, run_id, out_dir)
        raise
    finally:  # a local model server the eval started on demand stops with it
        from retrieval_bench.llm.factory import release_server

        release_server(llm.made, keep=llm_spec is not None and llm_spec.keep_server)
    if db is not None and run_id is not None and out_dir is not None:
        save_run_file(db, run_id, out_dir)  # what --rebuild-db reads back
    return EvalOutcome(path, label, result, dict(reports), list(row_errors), run_id, out_dir)


# ------------------------------------------------------------------ metrics
def metric_specs(
    metric_args: Sequence[str] | None, config_path: str | None
) -> tuple[list[MetricSpec], LLMSpec | None]:
    """Metric specs from ``--config`` then ``--metric``; the default text metrics
    when neither names one. Raises :class:`ConfigError` (one line) on a bad spec."""
    specs: list[MetricSpec] = []
    llm_spec: LLMSpec | None = None
    if config_path:
        loaded, llm_spec = load_metric_specs(Path(config_path))
        specs.extend(loaded)
    for text in metric_args or ():
        specs.append(as_spec(text))
    return specs or [as_spec(name) for name in DEFAULT_TEXT_METRICS], llm_spec


def build(specs: Sequence[MetricSpec], llm: Callable[[], LLM]) -> list[Metric]:
    """The metric objects; an unknown name or bad parameter is a :class:`ConfigError`."""
    try:
        metrics: list[Metric] = list(build_metrics(specs, llm))
        evaluator(metrics)  # names must be unique
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"metric spec: {_one_line(exc)}") from None
    return metrics


def evaluator(metrics: Sequence[Metric]) -> Evaluator:
    return Evaluator(metrics)


def _lazy_llm(spec: LLMSpec | None, ws: Workspace) -> LazyLLM:
    """The client of ``spec`` (default: the local server), made only when a metric
    that declares ``needs_llm`` is built."""

    def make() -> LLM:
        from retrieval_bench.llm.factory import make_llm

        return make_llm(spec or LLMSpec(), ws)

    return LazyLLM(make)


def _is_judge(metric: Any) -> bool:
    """Has the LLM-judge API a consistency check needs (``request``, ``verdict``, ``llm``)."""
    api = ("request", "verdict")
    return all(callable(getattr(metric, a, None)) for a in api) and hasattr(metric, "llm")


def judges(metrics: Sequence[Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(label, judge) of every LLM-judge metric, including composites' parts
    (labelled ``composite.part``)."""
    found: list[tuple[str, Any]] = []
    for metric in metrics:
        label = prefix + metric.name
        if _is_judge(metric):
            found.append((label, metric))
        found.extend(judges(getattr(metric, "parts", None) or (), label + "."))
    return found


def consistency_reports(
    metrics: Sequence[Metric], samples: Sequence[Sample], repeats: int
) -> dict[str, Any]:
    """label → ConsistencyReport of each LLM-judge metric (when ``repeats`` > 0)."""
    if repeats <= 0:
        return {}
    found = judges(metrics)
    if not found:
        print("  note: --consistency: no LLM-judge metric to check", file=sys.stderr)
        return {}
    from retrieval_bench.metrics.answer.judge_consistency import consistency

    reports: dict[str, Any] = {}
    for label, judge in found:
        try:
            reports[label] = consistency(judge, list(samples), repeats=repeats)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"--consistency {repeats}: {_one_line(exc)}") from None
    return reports


def _spec_dict(spec: MetricSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude_none=True)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


# -------------------------------------------------------------------- store
def file_fingerprint(path: Path) -> str:
    """sha256 of the predictions file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def store(
    db: ResultsDB, run_id: str, result: EvaluationResult, client: Any, prov: dict[str, Any]
) -> None:
    """The ``answer`` stage: metric means (+ corpus scores), per-sample values, failures."""
    means = {m: nan_if_missing(result.aggregates[m].mean) for m in result.metric_names}
    means.update({f"{m}_corpus": v for m, v in result.corpus.items()})
    reasons: dict[str, list[str]] = {}
    for f in result.failures:
        reasons.setdefault(f.sample_id, []).append(f"{f.metric}: {f.error}")
    stats = getattr(client, "stats", None)
    db.record_stage(
        run_id,
        STAGE,
        {"all": means},
        seconds=result.seconds,
        llm_calls=getattr(stats, "calls", 0),
        llm_tokens=getattr(stats, "tokens", 0),
        failures={sid: "; ".join(r) for sid, r in reasons.items()},
    )
    db.record_query_metrics(run_id, STAGE, result.stored_values())
    db.update_provenance(run_id, prov)


def write_results(
    out_dir: Path,
    config: dict[str, Any],
    prov: dict[str, Any],
    result: EvaluationResult,
    reports: dict[str, Any],
) -> None:
    """``results/<run-id>/``: config.json, scores.jsonl, summary.json (+ consistency.json)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(
        json.dumps({"config": config, "provenance": prov}, indent=2, default=str)
    )
    write_jsonl(out_dir / "scores.jsonl", result.rows())
    (out_dir / "summary.json").write_text(json.dumps(result.as_dict(), indent=2))
    if reports:
        (out_dir / "consistency.json").write_text(
            json.dumps({m: r.as_dict() for m, r in reports.items()}, indent=2, default=str)
        )


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Rows as JSONL (the run folder's ``scores.jsonl``; ``rbench eval --out`` writes
    through :class:`~retrieval_bench.out_file.OutFile`)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot write ({exc.strerror or exc}); check the workspace folder"
        ) from None

"""The answer stage of a benchmark run: answer from a stage's chunks, score the answers.

Answering (docs/stages.md#answerer) and the answer metrics
(docs/metrics.md#answer-metrics), wired into the benchmark run
(docs/architecture.md#how-a-benchmark-run-flows):

1. :func:`answer_dataset` — for one prepared dataset, the top ``k`` chunks of
   the ``answerer.input`` stage's :class:`~retrieval_bench.types.Run` per
   question go to the :class:`~retrieval_bench.answering.answerer.Answerer`
   (one ``chat_many`` through the run's shared LLM client). A question the
   input stage failed on gets no call; it is a failed answer with that reason.
2. :func:`evaluate_answers` — once over every dataset's answers: each answer
   becomes a :class:`~retrieval_bench.contracts.answer_metric.Sample` (prediction = the
   answer, references = the example's reference answer, contexts = the chunks
   shown, ``meta`` = repo root, gold files, dataset) and the
   :class:`~retrieval_bench.metrics.answer.evaluator.Evaluator` runs the configured
   ``answer_metrics`` (default :data:`DEFAULT_ANSWER_METRICS`). A failed answer
   is a missing value for every metric, with its error; means and bootstrap
   CIs are over all questions of all datasets.
3. :func:`~retrieval_bench.harness.answers.records.store_answers` /
   :func:`~retrieval_bench.harness.answers.records.write_answers` — the stage ``answer`` in the
   results database as ``rbench eval`` stores it
   (:mod:`retrieval_bench.harness.eval.predictions`: metric means under subset
   ``all``, per-query values with missing ones as NULL, failures), so
   ``rbench compare RUN_A:answer RUN_B:answer`` works across benchmark and
   eval runs; and ``answers.jsonl`` in ``results/<run-id>/``, whose rows
   ``rbench eval`` reads back as predictions (``answer``, ``reference_answer``,
   ``question``, ``contexts``, ``query_id``, and ``repo``/``gold_files`` for
   ``grounded_refs``). Keys that eval reads as sample fields are not reused:
   the code references are ``code_references`` (``references`` would be reference
   answers) and the input stage ``input_stage`` (``input`` would be the question).

The answer stage reads the retrieval stages' runs and changes none of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_bench.answering.answerer import Answer, Answerer, AnswerFailure, AnswerOutcome
from retrieval_bench.config import ANSWER_STAGE, AnswererSpec
from retrieval_bench.contracts.answer_metric import Aggregate, MetricBase, Sample, Score, aggregate
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.stages import STAGE_ERRORS, StageContext, stage_line
from retrieval_bench.llm.base import LLM, CallStats
from retrieval_bench.loads import own_seconds
from retrieval_bench.metrics.answer.evaluator import (
    EvaluationResult,
    Evaluator,
    Failure,
)
from retrieval_bench.metrics.answer.factory import (
    DEFAULT_TEXT_METRICS,
    as_spec,
    build_metrics,
    needs_llm,
)
from retrieval_bench.specs import MetricSpec
from retrieval_bench.types import Chunk, Example, Run, StageResult

__all__ = [
    "DEFAULT_ANSWER_METRICS",
    "AnswerSection",
    "DatasetAnswers",
    "answer_dataset",
    "evaluate_answers",
]

DEFAULT_ANSWER_METRICS = [*DEFAULT_TEXT_METRICS, "grounded_refs"]
"""What scores the answers when the config names no ``answer_metrics``."""


@dataclass
class DatasetAnswers:
    """One dataset's answers and what they were made from."""

    dataset: str
    root: Path
    """The snapshot's working tree (references are checked against it)."""
    examples: list[Example]
    answers: list[AnswerOutcome]
    """One per example, in example order."""
    chunks: dict[str, list[Chunk]]
    """query id → the chunks shown to the model, best first."""
    seconds: float = 0.0
    """The answering's own time (a model load during it is in ``loads``)."""
    llm: CallStats = field(default_factory=CallStats)
    loads: dict[str, float] = field(default_factory=dict)
    """Seconds spent loading models (e.g. starting the local LLM server) while answering."""


def answer_dataset(
    ctx: StageContext, spec: AnswererSpec, stages: Sequence[StageResult], source: str
) -> DatasetAnswers:
    """Answer every example of ``ctx.ds`` from the top ``spec.k`` chunks of stage ``source``."""
    ds = ctx.ds
    t0, before = time.perf_counter(), ctx.stats()
    by_name = {s.name: s for s in stages}
    examples = list(ds.examples)
    done: dict[str, AnswerOutcome] = {}
    chunks: dict[str, list[Chunk]] = {}
    stage = by_name.get(source)
    for ex in examples:
        if stage is None:
            done[ex.id] = AnswerFailure(ex.id, f"input stage {source!r} did not run", spec.rung)
        elif ex.id in stage.failures:
            reason = f"input stage {source} failed for this query: {stage.failures[ex.id]}"
            done[ex.id] = AnswerFailure(ex.id, reason, spec.rung)
        else:
            chunks[ex.id] = ds.corpus.get(stage.run.ids(ex.id, spec.k))
    todo = {ex.id: ex.query for ex in examples if ex.id not in done}
    if todo:
        try:
            llm = ctx.tracked(ctx.llm, ANSWER_STAGE)  # per-call progress with a reporter
            answerer = Answerer(llm, **spec.model_dump(exclude={"input"}))
            for outcome in answerer.answer_many(todo, chunks, ds.corpus):
                done[outcome.query_id] = outcome
        except STAGE_ERRORS as exc:
            reason = f"answerer failed: {type(exc).__name__}: {exc}"
            done.update({q: AnswerFailure(q, reason, spec.rung) for q in todo})
    shown = {}
    for qid, outcome in done.items():
        used = set(outcome.chunk_ids)
        shown[qid] = [c for c in chunks.get(qid, []) if c.id in used]
    seconds, loads = own_seconds(t0)
    answered = DatasetAnswers(
        dataset=ds.spec.name,
        root=Path(ds.snapshot.root),
        examples=examples,
        answers=[done[ex.id] for ex in examples],
        chunks=shown,
        seconds=seconds,
        llm=ctx.stats().since(before),
        loads=loads,
    )
    if ctx.progress is not None:
        spent = answered.llm
        line = StageResult(ANSWER_STAGE, Run(ANSWER_STAGE), seconds, llm_calls=spent.calls,
                           llm_cache_hits=spent.cache_hits, loads=loads)  # fmt: skip
        failed = sum(isinstance(a, AnswerFailure) for a in answered.answers)
        suffix = f"; {failed} of {len(examples)} questions without an answer" if failed else ""
        ctx.progress.note(stage_line(ds.spec.name, line) + suffix)
    return answered


# -- scoring --------------------------------------------------------------------------
@dataclass
class AnswerSection:
    """The answer stage of a whole run: answers of every dataset and their scores."""

    spec: AnswererSpec
    input: str
    """The stage whose chunks fed the answers."""
    datasets: list[DatasetAnswers]
    evaluation: EvaluationResult
    """Every question of every dataset; failed answers are missing for every metric."""
    sample_ids: dict[tuple[str, str], str]
    """(dataset, query id) → the sample id scores are stored under."""
    metric_llm: CallStats = field(default_factory=CallStats)
    metric_seconds: float = 0.0

    @property
    def outcomes(self) -> list[tuple[DatasetAnswers, AnswerOutcome]]:
        return [(d, a) for d in self.datasets for a in d.answers]

    @property
    def seconds(self) -> float:
        return sum(d.seconds for d in self.datasets) + self.metric_seconds

    def aggregates(self) -> dict[str, dict[str, float | int | None]]:
        """metric → mean, std, min, max, count, missing, ci_low, ci_high."""
        return {m: self.evaluation.aggregates[m].as_dict() for m in self.evaluation.metric_names}

    def llm_stats(self) -> dict[str, int]:
        keys = vars(CallStats())
        answering = CallStats(**{k: sum(getattr(d.llm, k) for d in self.datasets) for k in keys})
        return {
            "calls": answering.calls + self.metric_llm.calls,
            "tokens": answering.tokens + self.metric_llm.tokens,
            "cache_hits": answering.cache_hits + self.metric_llm.cache_hits,
            "failures": answering.failures + self.metric_llm.failures,
            "answer_calls": answering.calls,
            "answer_cache_hits": answering.cache_hits,
            "metric_calls": self.metric_llm.calls,
            "metric_cache_hits": self.metric_llm.cache_hits,
        }

    def failures(self) -> dict[str, str]:
        """sample id → why it has no answer or which metrics are missing."""
        reasons: dict[str, list[str]] = {}
        for d, a in self.outcomes:
            if isinstance(a, AnswerFailure):
                reasons[self.sample_ids[(d.dataset, a.query_id)]] = [f"no answer: {a.error}"]
        for f in self.evaluation.failures:
            if f.sample_id in reasons and reasons[f.sample_id][0].startswith("no answer"):
                continue
            reasons.setdefault(f.sample_id, []).append(f"{f.metric}: {f.error}")
        return {sid: "; ".join(r) for sid, r in reasons.items()}

    def references(self) -> dict[str, int]:
        """How many file references the answers cite and how many check out
        (``symbols``: references naming only a symbol, not checked here)."""
        refs = [r for _, a in self.outcomes if isinstance(a, Answer) for r in a.references]
        paths = [r for r in refs if r.path is not None]
        return {
            "files_cited": len(paths),
            "exist": sum(r.exists is True for r in paths),
            "ambiguous": sum(r.candidates > 1 for r in paths),
            "lines_cited": sum(r.start_line is not None for r in paths),
            "lines_exist": sum(r.lines_exist is True for r in paths),
            "in_context": sum(r.in_context for r in paths),
            "symbols": len(refs) - len(paths),
        }

    def summary(self) -> dict[str, Any]:
        """JSON-ready: the answerer, counts, metric aggregates, LLM use, references."""
        n_failed = sum(isinstance(a, AnswerFailure) for _, a in self.outcomes)
        return {
            "rung": self.spec.rung,
            "input": self.input,
            "k": self.spec.k,
            "questions": len(self.outcomes),
            "failed": n_failed,
            "seconds": self.seconds,
            "metrics": self.aggregates(),
            "corpus": dict(self.evaluation.corpus),
            "llm": self.llm_stats(),
            "references": self.references(),
        }


def _sample_ids(parts: Sequence[DatasetAnswers]) -> dict[tuple[str, str], str]:
    """Query ids, prefixed by the dataset only where two datasets share one."""
    seen: dict[str, int] = {}
    for d in parts:
        for ex in d.examples:
            seen[ex.id] = seen.get(ex.id, 0) + 1
    return {
        (d.dataset, ex.id): ex.id if seen[ex.id] == 1 else f"{d.dataset}:{ex.id}"
        for d in parts
        for ex in d.examples
    }


def _sample(d: DatasetAnswers, ex: Example, answer: Answer, sid: str) -> Sample:
    return Sample(
        prediction=answer.text,
        references=(ex.reference_answer,) if ex.reference_answer else (),
        question=ex.query,
        contexts=tuple(
            f"{c.path}:{c.start_line}-{c.end_line}\n{c.text}" for c in d.chunks.get(ex.id, [])
        ),
        id=sid,
        meta={"repo": str(d.root), "gold_files": list(ex.gold_files), "dataset": d.dataset},
    )


def _build(
    specs: Sequence[MetricSpec], llm_provider: Callable[[], LLM] | None
) -> tuple[list[MetricBase], dict[str, str], LLM | None]:
    """The metrics, the labels that could not be built for want of a model (→ error),
    and the model client the metrics use (None when none needs one)."""
    client: LLM | None = None
    broken: dict[str, str] = {}
    if llm_provider is not None and needs_llm(specs):
        try:
            client = llm_provider()
        except STAGE_ERRORS as exc:
            error = f"no LLM for this metric: {type(exc).__name__}: {exc}"
            broken = {s.label: error for s in specs if needs_llm([s])}
    buildable = [s for s in specs if s.label not in broken]

    def provide() -> LLM:
        if client is None:  # pragma: no cover - needs_llm said no metric takes one
            raise ConfigError("answer_metrics: a metric needs an LLM; configure the llm: section")
        return client

    return build_metrics(buildable, provide), broken, client


def evaluate_answers(
    spec: AnswererSpec,
    source: str,
    parts: Sequence[DatasetAnswers],
    metric_specs: Sequence[MetricSpec | str],
    llm_provider: Callable[[], LLM] | None = None,
    *,
    evaluator_options: Mapping[str, Any] | None = None,
) -> AnswerSection:
    """Score every dataset's answers with ``metric_specs`` (empty → the defaults)."""
    t0 = time.perf_counter()
    specs = [as_spec(s) for s in (metric_specs or DEFAULT_ANSWER_METRICS)]
    metrics, broken, client = _build(specs, llm_provider)
    before = client.stats.snapshot() if client is not None else CallStats()
    evaluator = Evaluator(metrics, **dict(evaluator_options or {}))
    ids = _sample_ids(parts)
    samples, failed = [], {}
    for d in parts:
        for ex, answer in zip(d.examples, d.answers, strict=True):
            sid = ids[(d.dataset, ex.id)]
            if isinstance(answer, Answer):
                samples.append(_sample(d, ex, answer, sid))
            else:
                failed[sid] = f"no answer: {answer.error}"
    scored = evaluator.run(samples)
    used = client.stats.since(before) if client is not None else CallStats()
    result = _with_failed(scored, metrics, specs, broken, list(ids.values()), failed, evaluator)
    result.seconds = own_seconds(t0)[0]  # a judge model's load is reported on its own
    return AnswerSection(spec, source, list(parts), result, ids, used, result.seconds)


def _with_failed(
    scored: EvaluationResult,
    metrics: Sequence[MetricBase],
    specs: Sequence[MetricSpec],
    broken: Mapping[str, str],
    order: Sequence[str],
    failed: Mapping[str, str],
    evaluator: Evaluator,
) -> EvaluationResult:
    """``scored`` (answered samples) extended to every sample of ``order``: failed
    answers and metrics that could not be built are missing values."""
    position = {sid: i for i, sid in enumerate(scored.sample_ids)}
    by_name = {m.name: m for m in metrics}
    names = [s.label for s in specs]
    out = EvaluationResult(list(order), names, {}, {}, dict(scored.corpus))
    out.corpus_errors = dict(scored.corpus_errors)
    for name in names:
        scores: list[Score] = []
        for sid in order:
            if sid in failed:
                score = Score.missing(failed[sid])
            elif name in broken:
                score = Score.missing(broken[name])
            else:
                score = scored.scores[name][position[sid]]
            scores.append(score)
            if score.value is None:
                out.failures.append(Failure(sid, name, score.error or "missing value", score.raw))
        out.scores[name] = scores
        metric = by_name.get(name)
        agg = metric.aggregate if metric is not None else aggregate
        result = agg(
            scores,
            confidence=evaluator.confidence,
            n_resamples=evaluator.n_resamples,
            seed=evaluator.seed,
        )
        out.aggregates[name] = result if isinstance(result, Aggregate) else aggregate(scores)
    return out

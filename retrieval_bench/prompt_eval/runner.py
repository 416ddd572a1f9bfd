"""Run prompt templates over ground-truth rows and rank them
(docs/architecture.md#prompt-evaluation).

For each prompt × row: fill the template's variables, call the model through
the shared :class:`~retrieval_bench.llm.base.LLM` (its response cache keys on
model, messages and parameters, so a re-run or a single edited prompt only
pays for the calls that changed), then ``parse`` → ``process`` →
``evaluate`` with the use case. A row whose call, parse or processing fails
is recorded with its error and raw text and scores 0; the run goes on.

Per prompt the runner counts matches per column (a boolean field counts the
rows that matched; a numeric extra such as TP is summed), sorts the prompts
with the use case's ``sort`` and compares each with the baseline prompt
(:mod:`.compare`). :func:`run_use_case` reads rows and prompts from the store
and records the run as history.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval_bench.llm.base import LLM, Completion, LLMError
from retrieval_bench.llm.reporting import ReportingLLM
from retrieval_bench.progress import Progress as Reporter
from retrieval_bench.prompt_eval.compare import compare_to_baseline
from retrieval_bench.prompt_eval.errors import InvalidRowError, NotFoundError, PromptEvalError
from retrieval_bench.prompt_eval.records import (
    EvaluationRun,
    Prompt,
    PromptResult,
    Row,
    RowOutcome,
)
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.template import build_request, check_prompt
from retrieval_bench.prompt_eval.usecase import UseCase

Progress = Callable[[str, float], None]
"""``(prompt name, fraction of prompts done)``: called once per finished prompt."""


def score_reply(
    use_case: UseCase, row: Row, truth: Mapping[str, Any], reply: Completion | LLMError
) -> RowOutcome:
    """parse → process → evaluate one model reply; failures become an error outcome."""
    if isinstance(reply, LLMError):
        return RowOutcome(row.id, row.version, None, None, None, f"model call failed: {reply}", 0.0)
    stage = "parse"
    try:
        data = use_case.parse(reply.text)
        stage = "process"
        response = use_case.process(data)
        stage = "evaluate"
        evaluation = use_case.evaluate(response, truth)
        score = float(use_case.row_score(evaluation))
        if not math.isfinite(score):
            raise ValueError(f"row_score returned {score}")
    except Exception as exc:  # user code: any failure is this row's, not the run's
        return RowOutcome(
            row.id, row.version, reply.text, None, None, f"{stage} failed: {exc}", 0.0,
            cached=reply.cached,
        )  # fmt: skip
    return RowOutcome(
        row.id, row.version, reply.text, response, evaluation, None, score, cached=reply.cached
    )


def count_matches(use_case: UseCase, outcomes: Sequence[RowOutcome]) -> dict[str, float]:
    """Column → rows matched (bool) or summed value (numbers); failed rows add nothing."""
    columns = list(use_case.columns())
    for o in outcomes:
        columns += [k for k in (o.evaluation or {}) if k not in columns]
    counts = dict.fromkeys(columns, 0.0)
    for o in outcomes:
        for key, value in (o.evaluation or {}).items():
            counts[key] += float(value)
    return counts


def _valid_rows(
    use_case: UseCase, rows: Sequence[Row]
) -> tuple[list[tuple[Row, Any]], dict[str, str]]:
    valid: list[tuple[Row, Any]] = []
    skipped: dict[str, str] = {}
    for row in rows:
        try:
            valid.append((row, use_case.validate_row(row)))
        except InvalidRowError as exc:
            skipped[row.id] = str(exc)
    return valid, skipped


def run_prompts(
    use_case: UseCase,
    rows: Sequence[Row],
    prompts: Sequence[Prompt],
    llm: LLM,
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
) -> EvaluationRun:
    """Evaluate every prompt on every valid row; ``baseline`` defaults to the first prompt.

    ``progress`` hears of each finished prompt; ``reporter`` (e.g. the CLI's
    :class:`~retrieval_bench.progress.ProgressReporter`) of each finished row, as
    counts with an ETA, plus one line per prompt.

    Prompts are checked first (unknown variable, bad parameters → error, no
    model call); rows that fail validation are skipped and reported."""
    if not prompts:
        raise PromptEvalError(f"use case {use_case.name}: no prompts to run; import some first")
    for prompt in prompts:
        check_prompt(prompt, use_case.variables, use_case.name)
    names = [p.name for p in prompts]
    if len(set(names)) != len(names):
        raise PromptEvalError(f"use case {use_case.name}: prompt names must be unique")
    baseline = baseline or names[0]
    if baseline not in names:
        raise NotFoundError(f"use case {use_case.name}: baseline prompt {baseline!r} not found")
    valid, skipped = _valid_rows(use_case, rows)
    if not valid:
        raise PromptEvalError(
            f"use case {use_case.name}: no valid ground-truth rows to run on; import some first"
        )
    before = llm.stats.snapshot()
    t0 = time.perf_counter()
    results: list[PromptResult] = []
    for i, prompt in enumerate(prompts):
        started = time.perf_counter()
        asker: LLM = llm
        if reporter is not None:
            label = f"prompt {prompt.name} ({i + 1}/{len(prompts)})"
            asker = ReportingLLM(llm, reporter, label, unit="rows")
        replies = asker.chat_many([build_request(prompt, row.variables) for row, _ in valid])
        outcomes = tuple(
            score_reply(use_case, row, truth, reply)
            for (row, truth), reply in zip(valid, replies, strict=True)
        )
        results.append(PromptResult(prompt, count_matches(use_case, outcomes), outcomes))
        if progress is not None:
            progress(prompt.name, (i + 1) / len(prompts))
        if reporter is not None:
            failed = sum(o.error is not None for o in outcomes)
            reporter.note(
                f"prompt {prompt.name}: {len(outcomes)} rows, {failed} failed, "
                f"{time.perf_counter() - started:.1f}s"
            )
    ranked = use_case.sort(results)
    if sorted(r.name for r in ranked) != sorted(names):
        raise PromptEvalError(
            f"use case {use_case.name}: sort() must return the given results, reordered"
        )
    base = next(r for r in results if r.name == baseline)
    comparisons = {
        r.name: compare_to_baseline(use_case, r, base, alpha=alpha)
        for r in ranked
        if r.name != baseline
    }
    spent = llm.stats.since(before)
    return EvaluationRun(
        use_case=use_case.name,
        results=tuple(ranked),
        baseline=baseline,
        comparisons=comparisons,
        model_calls=spent.calls,
        cache_hits=spent.cache_hits,
        failures=spent.failures,
        seconds=time.perf_counter() - t0,
        n_rows=len(valid),
        skipped_rows=skipped,
    )


def run_use_case(
    use_case: UseCase,
    llm: LLM,
    store: PromptStore,
    *,
    only: Sequence[str] | None = None,
    baseline: str | None = None,
    alpha: float = 0.05,
    record: bool = True,
    load_examples: bool = True,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
) -> EvaluationRun:
    """Run a stored use case (all prompts, or ``only`` these plus the baseline) and,
    with ``record``, keep the run in the store's history. A use case with nothing
    stored yet starts from its bundled examples when ``load_examples``."""
    from retrieval_bench.prompt_eval.history import record_run
    from retrieval_bench.prompt_eval.io import ensure_examples

    if load_examples:
        ensure_examples(store, use_case)
    prompts = store.prompts(use_case.name)
    baseline = baseline or store.baseline(use_case.name) or (prompts[0].name if prompts else None)
    if only:
        for name in only:
            store.prompt(use_case.name, name)  # NotFoundError naming the prompt
        keep = {*only, baseline}
        prompts = [p for p in prompts if p.name in keep]
    run = run_prompts(
        use_case,
        store.rows(use_case.name),
        prompts,
        llm,
        baseline=baseline,
        alpha=alpha,
        progress=progress,
        reporter=reporter,
    )
    return record_run(store, run) if record else run

"""Fail a test suite on a prompt or model regression: the Python API is usable from
a test suite, as part of integration tests (docs/architecture.md#prompt-evaluation).

    from retrieval_bench.prompt_eval.regression import assert_no_regression

    def test_classifier_prompt():
        assert_no_regression("code_questions", "json", baseline="plain", min_accuracy=0.5)

    def test_new_model():  # same prompt, another model, against the current one
        assert_no_regression("code_questions", "json", model="my-new-model")

It runs the candidate prompt(s) and the baseline over the rows (model calls
cached, so an unchanged suite costs nothing), then raises ``AssertionError``
with the run's table when a candidate is worse than the baseline by the use
case's sort rule *and* the paired randomisation test says so at ``alpha``
(``fail_on="any"`` drops the significance requirement), when its mean row
score is below ``min_accuracy``, or when a count is below ``min_counts``.
Rows and prompts come from the arguments, else the store, else the use case's
bundled examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from retrieval_bench.llm.base import LLM
from retrieval_bench.prompt_eval.errors import NotFoundError
from retrieval_bench.prompt_eval.io import read_prompts, read_rows
from retrieval_bench.prompt_eval.records import EvaluationRun, Prompt, Row
from retrieval_bench.prompt_eval.report import format_run
from retrieval_bench.prompt_eval.runner import run_prompts
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import UseCase, get_use_case
from retrieval_bench.workspace import Workspace


def _data(
    uc: UseCase,
    store: PromptStore | None,
    rows: Sequence[Row] | None,
    prompts: Sequence[Prompt] | None,
) -> tuple[list[Row], list[Prompt], str | None]:
    baseline = None
    if store is not None:
        rows = rows if rows is not None else store.rows(uc.name) or None
        if prompts is None and store.prompts(uc.name):
            prompts, baseline = store.prompts(uc.name), store.baseline(uc.name)
    if (rows is None or prompts is None) and uc.examples is None:
        raise NotFoundError(f"use case {uc.name}: no rows/prompts given, stored or bundled")
    if rows is None and uc.examples is not None:
        rows = read_rows(uc.examples.rows, uc)
    if prompts is None and uc.examples is not None:
        prompts, baseline = read_prompts(uc.examples.prompts, uc)
        baseline = baseline or uc.examples.baseline
    assert rows is not None and prompts is not None
    return list(rows), list(prompts), baseline


def _pick(prompts: Sequence[Prompt], p: str | Prompt, uc: UseCase) -> Prompt:
    if isinstance(p, Prompt):
        return p
    for prompt in prompts:
        if prompt.name == p:
            return prompt
    names = ", ".join(x.name for x in prompts)
    raise NotFoundError(f"use case {uc.name}: no prompt {p!r} (prompts: {names})")


def assert_no_regression(
    use_case: str | UseCase,
    prompt: str | Prompt | None = None,
    *,
    baseline: str | Prompt | None = None,
    model: str | None = None,
    min_accuracy: float | None = None,
    min_counts: Mapping[str, float] | None = None,
    alpha: float = 0.05,
    fail_on: str = "significant",
    llm: LLM | None = None,
    store: PromptStore | None = None,
    rows: Sequence[Row] | None = None,
    prompts: Sequence[Prompt] | None = None,
    workspace: Workspace | None = None,
) -> EvaluationRun:
    """Run and check; returns the run when nothing regressed (see module docstring).

    ``prompt`` None checks every prompt. ``model`` runs the candidate(s) on that
    model (named ``NAME@MODEL``) against the baseline on its own model; with no
    ``prompt`` the candidate is the baseline prompt itself."""
    if fail_on not in ("significant", "any"):
        raise ValueError(f"fail_on must be 'significant' or 'any', got {fail_on!r}")
    uc = get_use_case(use_case)
    all_rows, all_prompts, stored_baseline = _data(uc, store, rows, prompts)
    base = _pick(all_prompts, baseline or stored_baseline or all_prompts[0].name, uc)
    if prompt is not None:
        candidates = [_pick(all_prompts, prompt, uc)]
    else:
        candidates = [p for p in all_prompts if p.name != base.name] if model is None else [base]
    if model is not None:
        candidates = [replace(p, name=f"{p.name}@{model}", model=model) for p in candidates]
    to_run = [base, *[c for c in candidates if c.name != base.name]]
    if llm is None:
        from retrieval_bench.llm.factory import make_llm
        from retrieval_bench.llm.settings import LLMSpec

        llm = make_llm(LLMSpec(), workspace)
    run = run_prompts(uc, all_rows, to_run, llm, baseline=base.name, alpha=alpha)
    problems = []
    if prompt is None and model is None:
        checked = list(run.results)
    else:
        checked = [run.result(c.name) for c in candidates]
    for result in checked:
        cmp = run.comparisons.get(result.name)
        if cmp is not None and cmp.verdict == "worse" and (cmp.significant or fail_on == "any"):
            problems.append(
                f"prompt {result.name} is worse than baseline {base.name}: score "
                f"{cmp.candidate_score:.3f} vs {cmp.baseline_score:.3f} over {cmp.n_rows} rows "
                f"({cmp.wins} better, {cmp.losses} worse, p = {cmp.p_value:.4f})"
            )
        if min_accuracy is not None and not result.score >= min_accuracy:
            problems.append(
                f"prompt {result.name} scores {result.score:.3f}, below min_accuracy {min_accuracy}"
            )
        for column, least in (min_counts or {}).items():
            have = result.counts.get(column, 0.0)
            if have < least:
                problems.append(
                    f"prompt {result.name}: {column} matched {have:g}/{result.n_rows}, "
                    f"below {least:g}"
                )
    if problems:
        raise AssertionError(
            f"prompt regression in use case {uc.name}:\n  - "
            + "\n  - ".join(problems)
            + "\n\n"
            + format_run(uc, run)
        )
    return run

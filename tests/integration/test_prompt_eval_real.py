"""Prompt evaluation (docs/architecture.md#prompt-evaluation) against the real local model
(llama.cpp + SmolLM2-135M).

Both bundled use cases run through ``rbench prompts run`` over HTTP with the
real response cache; the second run of each makes zero model calls (checked
on the client's own counters); history keeps both runs; the regression helper
runs from the cache. Scores are whatever the tiny model earns — the test
checks the workflow, not the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.llm.factory import make_llm
from retrieval_bench.llm.local_server import ServerState
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.prompt_eval.history import history
from retrieval_bench.prompt_eval.regression import assert_no_regression
from retrieval_bench.prompt_eval.report import format_run
from retrieval_bench.prompt_eval.runner import run_use_case
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import get_use_case
from retrieval_bench.workspace import Workspace

pytestmark = pytest.mark.integration

SIZES = {"code_questions": (10, 3), "action_items": (8, 3)}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A fresh workspace and an empty response cache, so the first run calls the model."""
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    return Workspace(tmp_path / "ws")


def test_examples_on_the_real_model_then_from_cache(
    llm_server: ServerState, ws: Workspace, capsys: Any
) -> None:
    url = llm_server.base_url
    for name, (n_rows, n_prompts) in SIZES.items():
        calls = n_rows * n_prompts
        args = ["--workspace", str(ws.root), "prompts", "run", name, "--base-url", url]
        assert main(args) == EXIT_OK
        table = capsys.readouterr().out
        assert f"{name}: {n_rows} rows x {n_prompts} prompts, baseline plain" in table
        assert re.search(rf"model calls {calls}, cache hits 0, failed calls 0", table)

        # re-run through the API: the client's own counters show zero model calls
        client = make_llm(LLMSpec(base_url=url), ws)
        with PromptStore.for_workspace(ws) as store:
            uc = get_use_case(name)
            again = run_use_case(uc, client, store)
            assert f"model calls 0, cache hits {calls}" in format_run(uc, again)
            assert (client.stats.calls, client.stats.cache_hits) == (0, calls)
            assert (again.model_calls, again.cache_hits) == (0, calls)
            assert all(o.cached for r in again.results for o in r.outcomes)
            entries = history(store, name)
        assert len(entries) == 2 * n_prompts
        first, second = entries[:n_prompts], entries[n_prompts:]
        # identical answers from the cache -> identical scores and ranks
        assert [(e.prompt, e.score, e.counts) for e in first] == [
            (e.prompt, e.score, e.counts) for e in second
        ]
        assert all(e.change == 0 for e in second)

    assert main(["--workspace", str(ws.root), "prompts", "history", "--json"]) == EXIT_OK
    assert len(json.loads(capsys.readouterr().out)) == 2 * sum(p for _, p in SIZES.values())


def test_regression_helper_on_the_real_model(llm_server: ServerState, ws: Workspace) -> None:
    client = make_llm(LLMSpec(base_url=llm_server.base_url), ws)
    run = assert_no_regression("code_questions", "plain", llm=client, min_accuracy=0.0)
    score = run.result("plain").score
    first_calls = client.stats.calls
    assert first_calls == 10  # only the baseline prompt, once per row
    assert_no_regression("code_questions", "plain", llm=client, min_accuracy=score)
    assert client.stats.calls == first_calls  # the second check came from the cache
    with pytest.raises(AssertionError, match=r"below min_accuracy 1.01[\s\S]*rank  prompt"):
        assert_no_regression("code_questions", "plain", llm=client, min_accuracy=1.01)

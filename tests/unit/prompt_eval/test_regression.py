"""The test-suite helper: passes quietly, fails with a readable table."""

from __future__ import annotations

import pytest

from retrieval_bench.llm.base import ChatRequest
from retrieval_bench.prompt_eval.regression import assert_no_regression
from retrieval_bench.prompt_eval.store import PromptStore
from tests.fakes.llm import ScriptedLLM, last_user
from tests.unit.prompt_eval.conftest import (
    MORE_ROWS,
    SENTIMENT_ROWS,
    TRUTH,
    Sentiment,
    oracle,
    prompt,
)

ROWS10 = SENTIMENT_ROWS + MORE_ROWS


def test_passes_and_returns_the_run(sentiment: Sentiment) -> None:
    run = assert_no_regression(
        sentiment,
        "new",
        baseline="old",
        min_accuracy=0.9,
        llm=oracle(),
        rows=SENTIMENT_ROWS,
        prompts=[prompt("old"), prompt("new", "Review: {text}\nLabel please:")],
    )
    assert run.comparisons["new"].verdict == "same"


def test_significantly_worse_prompt_fails_with_table(sentiment: Sentiment) -> None:
    llm = oracle(wrong=lambda req, _t: "worse" in last_user(req))
    with pytest.raises(AssertionError) as err:
        assert_no_regression(
            sentiment,
            "new",
            baseline="old",
            llm=llm,
            rows=ROWS10,
            prompts=[prompt("old"), prompt("new", "Review: {text}\nworse:")],
        )
    msg = str(err.value)
    assert "prompt new is worse than baseline old: score 0.000 vs 1.000 over 10 rows" in msg
    assert "p = 0.0020" in msg
    assert "rank  prompt" in msg and "worse *" in msg  # the run's table


def test_not_significant_passes_unless_fail_on_any(sentiment: Sentiment) -> None:
    llm = oracle(wrong=lambda req, t: "worse" in last_user(req) and t == "great film")
    kwargs = {
        "baseline": "old",
        "llm": llm,
        "rows": SENTIMENT_ROWS,
        "prompts": [prompt("old"), prompt("new", "Review: {text}\nworse:")],
    }
    assert_no_regression(sentiment, "new", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="worse than baseline"):
        assert_no_regression(sentiment, "new", fail_on="any", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="scores 0.750, below min_accuracy 0.8"):
        assert_no_regression(sentiment, "new", min_accuracy=0.8, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="label matched 3/4, below 4"):
        assert_no_regression(sentiment, "new", min_counts={"label": 4}, **kwargs)  # type: ignore[arg-type]


def test_model_regression_runs_the_prompt_on_another_model(sentiment: Sentiment) -> None:
    def script(req: ChatRequest) -> str:
        text = last_user(req).split("Review: ")[-1].split("\n")[0]
        label = TRUTH[text] if req.extra.get("model") != "tiny" else "pos"
        return f'{{"label": "{label}"}}'

    llm = ScriptedLLM(script)
    with pytest.raises(AssertionError, match=r"prompt old@tiny is worse than baseline old"):
        assert_no_regression(
            sentiment, model="tiny", llm=llm, rows=ROWS10, prompts=[prompt("old")],
            fail_on="any",
        )  # fmt: skip
    assert {r.extra.get("model") for r in llm.requests} == {None, "tiny"}


def test_reads_stored_rows_prompts_and_baseline(store: PromptStore, sentiment: Sentiment) -> None:
    store.import_rows(sentiment, SENTIMENT_ROWS)
    store.import_prompts(sentiment, [prompt("a"), prompt("b", "Review: {text}\nworse:")])
    store.set_baseline("sentiment", "b")
    llm = oracle(wrong=lambda req, _t: "worse" in last_user(req))
    run = assert_no_regression(sentiment, llm=llm, store=store, fail_on="any")
    assert run.baseline == "b" and run.comparisons["a"].verdict == "better"

"""The runner over a scripted model: counts, failures, sort, baseline, history."""

from __future__ import annotations

from dataclasses import replace

import pytest

from retrieval_bench.llm.base import ChatRequest, LLMUnavailableError
from retrieval_bench.prompt_eval.errors import InvalidPromptError, NotFoundError
from retrieval_bench.prompt_eval.history import history, row_outcomes
from retrieval_bench.prompt_eval.records import Row
from retrieval_bench.prompt_eval.runner import run_prompts, run_use_case
from retrieval_bench.prompt_eval.store import PromptStore
from tests.fakes.llm import ScriptedLLM, last_user
from tests.unit.prompt_eval.conftest import SENTIMENT_ROWS, Sentiment, oracle, prompt


def is_bad_prompt(req: ChatRequest, text: str) -> bool:
    return "Label (bad):" in last_user(req) and text in ("great film", "awful plot")


def test_counts_sort_and_baseline(sentiment: Sentiment) -> None:
    llm = oracle(wrong=is_bad_prompt)
    prompts = [prompt("bad", "Review: {text}\nLabel (bad):"), prompt("good")]
    run = run_prompts(sentiment, SENTIMENT_ROWS, prompts, llm)
    assert run.baseline == "bad"  # default: the first prompt
    assert [r.name for r in run.results] == ["good", "bad"]
    assert run.result("good").counts == {"label": 4.0}
    assert run.result("bad").counts == {"label": 2.0}
    assert run.result("bad").score == 0.5
    cmp = run.comparisons["good"]
    assert (cmp.verdict, cmp.wins, cmp.losses) == ("better", 2, 0)
    assert cmp.p_value == pytest.approx(0.5)  # exact: 2 discordant rows of 4
    assert (run.model_calls, run.n_rows, run.rank("bad")) == (8, 4, 2)
    assert "bad" not in run.comparisons  # the baseline is not compared with itself
    assert last_user(llm.requests[0]) == "Review: great film\nLabel (bad):"


def test_failures_are_rows_not_runs(sentiment: Sentiment) -> None:
    def script(req: ChatRequest) -> str | Exception:
        text = last_user(req).split("Review: ")[-1].split("\n")[0]
        replies: dict[str, str | Exception] = {
            "great film": LLMUnavailableError("server down"),
            "awful plot": "no idea",
            "loved it": '{"label": "fantastic"}',
        }
        return replies.get(text, '{"label": "neg"}')

    run = run_prompts(sentiment, SENTIMENT_ROWS, [prompt("p")], ScriptedLLM(script))
    res = run.result("p")
    errors = {o.row_id: o.error for o in res.outcomes}
    assert errors["r1"] == "model call failed: server down"
    assert errors["r2"] is not None and errors["r2"].startswith("parse failed: no JSON")
    assert errors["r3"] is not None and errors["r3"].startswith("process failed: label must be")
    assert errors["r4"] is None
    assert (res.n_failed, res.counts["label"], res.score) == (3, 1.0, 0.25)
    assert res.outcome("r2") is not None and res.outcome("r2").raw == "no idea"  # type: ignore[union-attr]


def test_unknown_variable_refused_before_any_call(sentiment: Sentiment) -> None:
    llm = oracle()
    with pytest.raises(InvalidPromptError, match="unknown variable {review}"):
        run_prompts(sentiment, SENTIMENT_ROWS, [prompt("ok"), prompt("bad", "{review}")], llm)
    assert llm.requests == []


def test_invalid_rows_are_skipped_and_reported(sentiment: Sentiment) -> None:
    rows = [*SENTIMENT_ROWS, Row("broken", {"text": "meh"}, {"label": "maybe"})]
    run = run_prompts(sentiment, rows, [prompt("p")], oracle())
    assert run.n_rows == 4 and "broken" in run.skipped_rows
    assert "label must be one of pos, neg" in run.skipped_rows["broken"]


def test_baseline_must_exist(sentiment: Sentiment) -> None:
    with pytest.raises(NotFoundError, match="baseline prompt 'zzz'"):
        run_prompts(sentiment, SENTIMENT_ROWS, [prompt("p")], oracle(), baseline="zzz")


def test_stored_runs_history_and_only(store: PromptStore, sentiment: Sentiment) -> None:
    store.import_rows(sentiment, SENTIMENT_ROWS)
    store.import_prompts(sentiment, [prompt("base", "Review: {text}\nLabel (bad):"), prompt("alt")])
    store.set_baseline("sentiment", "base")
    llm = oracle(wrong=is_bad_prompt)
    first = run_use_case(sentiment, llm, store)
    assert first.run_id is not None
    # edit the baseline prompt (fixing it), then run only the other prompt (+ the baseline)
    fixed = replace(store.prompt("sentiment", "base"), user="Review: {text}\nLabel:")
    store.save_prompt(sentiment, fixed)
    second = run_use_case(sentiment, llm, store, only=["alt"])
    assert {r.name for r in second.results} == {"alt", "base"}
    entries = history(store, "sentiment", "base")
    assert [(e.prompt_version, e.score, e.verdict) for e in entries] == [
        (1, 0.5, "baseline"),
        (2, 1.0, "baseline"),
    ]
    assert entries[1].change == pytest.approx(0.5)
    alt = history(store, "sentiment", "alt")
    assert [e.verdict for e in alt] == ["better", "same"]
    drill = row_outcomes(store, first.run_id, "base")
    assert [(o.row_id, o.score) for o in drill] == [
        ("r1", 0.0),
        ("r2", 0.0),
        ("r3", 1.0),
        ("r4", 1.0),
    ]
    assert drill[0].evaluation == {"label": False} and drill[0].raw == 'Sure: {"label": "neg"}'
    with pytest.raises(NotFoundError):
        row_outcomes(store, "no-such-run", "base")
    with pytest.raises(NotFoundError, match="no prompt 'ghost'"):
        run_use_case(sentiment, llm, store, only=["ghost"])


def test_bundled_use_case_runs_from_an_empty_store(store: PromptStore) -> None:
    from retrieval_bench.prompt_eval.usecase import get_use_case

    uc = get_use_case("code_questions")
    llm = ScriptedLLM('{"category": "howto", "language": "go"}')
    run = run_use_case(uc, llm, store, record=False)
    assert run.n_rows == 10 and len(run.results) == 3 and run.model_calls == 30
    # rows: 3 howto, 2 go; every prompt gives the same answers -> all tie
    assert all(r.counts == {"category": 3.0, "language": 2.0} for r in run.results)
    assert {c.verdict for c in run.comparisons.values()} == {"same"}
    assert history(store) == []  # record=False

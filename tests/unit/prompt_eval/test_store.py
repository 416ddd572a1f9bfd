"""Rows and prompts with every edit kept, optimistic versioning (two tabs), and
the store living beside the results database in the same file."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from retrieval_bench.prompt_eval.errors import (
    InvalidPromptError,
    InvalidRowError,
    NotFoundError,
    StaleWriteError,
)
from retrieval_bench.prompt_eval.records import Row
from retrieval_bench.prompt_eval.schema import PROMPT_EVAL_MIGRATIONS
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.schema import MIGRATIONS
from tests.unit.prompt_eval.conftest import SENTIMENT_ROWS, Sentiment, prompt


def test_row_edits_are_versioned(store: PromptStore, sentiment: Sentiment) -> None:
    r1 = store.save_row(sentiment, SENTIMENT_ROWS[0])
    assert r1.version == 1
    r2 = store.save_row(sentiment, replace(r1, expected={"label": "neg"}))
    assert r2.version == 2 and store.row("sentiment", "r1").expected == {"label": "neg"}
    assert store.save_row(sentiment, r2).version == 2  # unchanged content: no new version
    versions = store.query("SELECT version FROM pe_rows WHERE row_id = 'r1' ORDER BY version")
    assert [v[0] for v in versions] == [1, 2]


def test_two_tabs_editing_the_same_row(store: PromptStore, sentiment: Sentiment) -> None:
    loaded = store.save_row(sentiment, SENTIMENT_ROWS[0])
    tab_a = replace(loaded, variables={"text": "edited in tab A"})
    tab_b = replace(loaded, variables={"text": "edited in tab B"})
    store.save_row(sentiment, tab_a)
    with pytest.raises(StaleWriteError, match="stored version 2, your edit was based on version 1"):
        store.save_row(sentiment, tab_b)
    assert store.row("sentiment", "r1").variables == {"text": "edited in tab A"}
    # a "new" row whose id exists is refused too
    with pytest.raises(StaleWriteError, match="already exists"):
        store.save_row(sentiment, replace(SENTIMENT_ROWS[0], version=0))
    # deleting from a stale tab is refused; from the fresh one it works
    with pytest.raises(StaleWriteError):
        store.delete_row("sentiment", "r1", 1)
    store.delete_row("sentiment", "r1", 2)
    assert store.rows("sentiment") == []
    with pytest.raises(StaleWriteError, match="deleted elsewhere"):
        store.save_row(sentiment, tab_b)
    assert store.save_row(sentiment, replace(tab_b, version=0)).version == 4  # re-added


def test_concurrent_writers_one_wins(tmp_path: Path, sentiment: Sentiment) -> None:
    path = tmp_path / "shared.sqlite"
    with PromptStore(path) as s:
        base = s.save_row(sentiment, SENTIMENT_ROWS[0])
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def tab(i: int) -> None:
        with PromptStore(path) as s:
            barrier.wait()
            try:
                s.save_row(sentiment, replace(base, variables={"text": f"tab {i}"}))
                outcomes.append("saved")
            except StaleWriteError:
                outcomes.append("refused")

    threads = [threading.Thread(target=tab, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused", "refused", "refused", "saved"]
    with PromptStore(path) as s:
        assert s.row("sentiment", "r1").version == 2


def test_prompt_history_keeps_every_edit(store: PromptStore, sentiment: Sentiment) -> None:
    p1 = store.save_prompt(sentiment, prompt("short"))
    p2 = store.save_prompt(sentiment, replace(p1, user="Review: {text}\nAnswer pos or neg:"))
    store.delete_prompt("sentiment", "short", p2.version)
    history = store.prompt_versions("sentiment", "short")
    assert [(v.prompt.version, v.deleted) for v in history] == [(1, False), (2, False), (3, True)]
    assert history[1].prompt.user.endswith("pos or neg:")
    assert store.prompts("sentiment") == []
    with pytest.raises(NotFoundError, match="no prompt 'short'"):
        store.prompt("sentiment", "short")


def test_invalid_input_stores_nothing(store: PromptStore, sentiment: Sentiment) -> None:
    with pytest.raises(InvalidRowError, match="row 'bad'"):
        store.save_row(sentiment, Row("bad", {"text": "x"}, {"label": "maybe"}))
    with pytest.raises(InvalidPromptError, match="unknown variable {review}"):
        store.save_prompt(sentiment, prompt("p", user="{review}"))
    with pytest.raises(InvalidRowError):
        store.import_rows(sentiment, [*SENTIMENT_ROWS, Row("bad", {"text": "x"}, {})])
    assert not store.has_data("sentiment")


def test_import_counts_and_replace(store: PromptStore, sentiment: Sentiment) -> None:
    s1 = store.import_rows(sentiment, SENTIMENT_ROWS[:3])
    assert (s1.added, s1.updated, s1.unchanged) == (3, 0, 0)
    changed = [SENTIMENT_ROWS[0], replace(SENTIMENT_ROWS[1], variables={"text": "new"})]
    s2 = store.import_rows(sentiment, changed, replace=True)
    assert (s2.added, s2.updated, s2.unchanged, s2.removed) == (0, 1, 1, 1)
    assert [r.id for r in store.rows("sentiment")] == ["r1", "r2"]


def test_baseline_and_order(store: PromptStore, sentiment: Sentiment) -> None:
    store.import_prompts(sentiment, [prompt("b"), prompt("a")])
    assert [p.name for p in store.prompts("sentiment")] == ["b", "a"]  # creation order
    assert store.baseline("sentiment") is None
    store.set_baseline("sentiment", "a")
    assert store.baseline("sentiment") == "a"
    with pytest.raises(NotFoundError):
        store.set_baseline("sentiment", "zzz")


def test_shares_the_results_database_file(tmp_path: Path, sentiment: Sentiment) -> None:
    path = tmp_path / "rbench.sqlite"
    with ResultsDB(path) as db:
        run_id = db.start_run("bench")
    with PromptStore(path) as s:
        s.save_row(sentiment, SENTIMENT_ROWS[0])
    with PromptStore(path) as s:  # migrations applied once
        assert s.migrate() == len(PROMPT_EVAL_MIGRATIONS)
        assert len(s.rows("sentiment")) == 1
    with ResultsDB(path) as db:
        assert db.schema_version == len(MIGRATIONS)
        assert db.get_run(run_id).name == "bench"

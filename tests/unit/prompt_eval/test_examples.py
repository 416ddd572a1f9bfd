"""The two worked use cases: hand-computed matching, parsing of real model
styles, and the bundled data (every row valid, every prompt template valid)."""

from __future__ import annotations

import pytest

from retrieval_bench.prompt_eval.examples.action_items import ActionItems, match_items
from retrieval_bench.prompt_eval.io import ensure_examples
from retrieval_bench.prompt_eval.records import Prompt, PromptResult, RowOutcome
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import get_use_case

GOLD = [
    {"owner": "Alice", "task": "send the budget report by Friday"},
    {"owner": "Bob", "task": "fix the login bug"},
]


def test_match_items_hand_computed() -> None:
    predicted = [
        {"owner": "bob", "task": "Fix login bug"},  # 3 of {fix, login, bug}: match
        {"owner": "Alice", "task": "send report"},  # 2 of {send, budget, report, friday}
        {"owner": "Carl", "task": "book a room"},  # = 0.5: match; Carl's item: FP
    ]
    assert match_items(predicted, GOLD) == (2, 1, 0)
    # wrong owner: no match even with the same task
    assert match_items([{"owner": "Eve", "task": "fix the login bug"}], GOLD) == (0, 1, 2)
    # below half of the gold task's content words: no match (1/4)
    assert match_items([{"owner": "Alice", "task": "the report"}], GOLD) == (0, 1, 2)
    # a gold item without owner accepts any owner
    unowned = [{"owner": "", "task": "renew the TLS certificate"}]
    assert match_items([{"owner": "Zed", "task": "renew TLS"}], unowned) == (1, 0, 0)
    # one predicted item cannot match two gold items
    assert match_items([GOLD[0]], [GOLD[0], GOLD[0]]) == (1, 0, 1)


def test_action_items_evaluate_and_row_score() -> None:
    uc = ActionItems()
    truth = uc.process({"action_items": GOLD})
    assert truth["owners"] == ["alice", "bob"] and truth["count"] == 2
    response = uc.process(uc.parse("1. Alice will send the budget report\n2. Carl: book a room"))
    evaluation = uc.evaluate(response, truth)
    assert evaluation == {
        "action_items": False,
        "owners": False,
        "count": True,
        "TP": 1,
        "FP": 1,
        "FN": 1,
    }
    assert uc.row_score(evaluation) == pytest.approx(2 * 1 / (2 + 1 + 1))
    empty = uc.process({"action_items": []})
    assert uc.row_score(uc.evaluate(empty, empty)) == 1.0


def test_action_items_parse_styles() -> None:
    uc = ActionItems()
    joined = uc.process(uc.parse("Ivan will send the pricing sheet, and Judy will set up a demo."))
    assert [(i["owner"], i["task"]) for i in joined["action_items"]] == [
        ("Ivan", "send the pricing sheet"),
        ("Judy", "set up a demo"),
    ]
    as_json = uc.process(uc.parse('[{"owner": "Ann", "task": "ship it"}, "Bo: test it"]'))
    assert as_json["owners"] == ["ann", "bo"]
    assert uc.process(uc.parse("No action items.")) == {
        "action_items": [],
        "owners": [],
        "count": 0,
    }
    with pytest.raises(ValueError, match="no action items found"):
        uc.parse("I'm glad to hear that.")
    with pytest.raises(ValueError, match=r"action_items\[0\]"):
        uc.process({"action_items": [{"owner": "A"}]})  # no task


def _result(name: str, score: float, tp: float) -> PromptResult:
    outcome = RowOutcome("r", 1, "", {}, {}, None, score)
    return PromptResult(Prompt(name, "{notes}"), {"TP": tp, "action_items": 0}, (outcome,))


def test_action_items_sort_by_mean_row_f1_then_tp() -> None:
    uc = ActionItems()
    ranked = uc.sort([_result("a", 0.5, 9), _result("b", 0.8, 1), _result("c", 0.5, 10)])
    assert [r.name for r in ranked] == ["b", "c", "a"]


def test_bundled_examples_load_and_validate(store: PromptStore) -> None:
    for name, n_rows, n_prompts in (("action_items", 8, 3), ("code_questions", 10, 3)):
        uc = get_use_case(name)
        assert ensure_examples(store, uc) is True
        assert len(store.rows(name)) == n_rows
        assert len(store.prompts(name)) == n_prompts
        assert store.baseline(name) == "plain"
        assert ensure_examples(store, uc) is False  # once only

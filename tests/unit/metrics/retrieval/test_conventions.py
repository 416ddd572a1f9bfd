"""Module and function levels under LocAgent's conventions and this project's: one
fixture per rule where the two give different numbers, hand-computed
(docs/metrics.md#conventions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.conventions import SCORED, fold_init, min_accuracy
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.types import Example, Run

EMPTY = Corpus(Path("."), [])


def scores(example: Example, ranked: list[str], conventions: str) -> dict[str, float]:
    run = Run(
        "s", {example.id: {f"entity:{e}": float(len(ranked) - i) for i, e in enumerate(ranked)}}
    )
    m = evaluate_stage(run, [example], EMPTY, ks=(1, 2, 5), budgets=(), conventions=conventions)  # type: ignore[arg-type]
    return m.per_query[example.id]


def test_init_is_its_class_under_locagent() -> None:
    ex = Example("q", "?", ("m.py",), gold_functions=("m.py:C.__init__",))
    assert fold_init("m.py:C.__init__") == "m.py:C" and fold_init("m.py:f") == "m.py:f"
    # the ranking names the class first: LocAgent's evaluation counts it
    assert scores(ex, ["m.py:C", "m.py:g"], "locagent")["function_Acc@1"] == 1.0
    assert scores(ex, ["m.py:C", "m.py:g"], "rbench")["function_Acc@1"] == 0.0
    # a ranking naming both C and C.__init__ keeps one item, at its best place
    q = scores(ex, ["m.py:g", "m.py:C.__init__", "m.py:C"], "locagent")
    assert q["function_MRR"] == 0.5 and q["function_P@2"] == 0.5


def test_acc_over_min_of_gold_and_k() -> None:
    gold = ("m.py:a", "m.py:b", "m.py:c")
    ex = Example("q", "?", ("m.py",), gold_functions=gold, gold_functions_locagent=gold)
    ranked = ["m.py:a", "m.py:b", "m.py:x", "m.py:c"]
    loc, own = scores(ex, ranked, "locagent"), scores(ex, ranked, "rbench")
    # top 1 = [a]: min(3, 1) = 1 gold item → 1 under LocAgent, not all gold → 0
    assert (loc["function_Acc@1"], loc["function_Acc@2"], loc["function_Acc@5"]) == (1.0, 1.0, 1.0)
    assert (own["function_Acc@1"], own["function_Acc@2"], own["function_Acc@5"]) == (0.0, 0.0, 1.0)
    assert loc["function_R@2"] == own["function_R@2"] == 2 / 3  # other measures agree
    # one module m.py:a … each function is its own module here
    assert loc["module_Acc@2"] == 1.0 and own["module_Acc@2"] == 0.0
    assert min_accuracy([["a", "x"]], [["a", "b"]], 2).tolist() == [0.0]


def test_locagent_reads_its_own_gold() -> None:
    # a new method: this project's gold names the class, LocAgent's names nothing
    ex = Example("q", "?", ("m.py",), gold_functions=("m.py:C",), gold_functions_locagent=())
    own = scores(ex, ["m.py:C"], "rbench")
    assert own["function_Acc@1"] == 1.0 and own[SCORED] == 1.0
    loc = scores(ex, ["m.py:C"], "locagent")
    assert not any(k.startswith(("function_", "module_")) for k in loc)  # left out
    # with another question that has gold, the empty one counts 0 in has_gold_functions
    other = Example(
        "r", "?", ("m.py",), gold_functions=("m.py:f",), gold_functions_locagent=("m.py:f",)
    )
    run = Run("s", {"q": {"entity:m.py:C": 1.0}, "r": {"entity:m.py:f": 1.0}})
    m = evaluate_stage(run, [ex, other], EMPTY, ks=(1,), budgets=(), conventions="locagent")
    assert m.means[SCORED] == 0.5 and m.counts["function_Acc@1"] == 1


def test_hand_written_gold_is_read_by_both() -> None:
    ex = Example("q", "?", ("m.py",), gold_functions=("m.py:f",))  # not derived
    assert scores(ex, ["m.py:f"], "locagent")["function_Acc@1"] == 1.0
    assert scores(ex, ["m.py:f"], "rbench")["function_Acc@1"] == 1.0


def test_file_level_is_the_same_under_both() -> None:
    gold = ("m.py:a", "n.py:b")
    ex = Example("q", "?", ("m.py", "n.py"), gold_functions=gold, gold_functions_locagent=gold)
    loc, own = (
        scores(ex, ["m.py:a", "x.py:z", "n.py:b"], "locagent"),
        scores(ex, ["m.py:a", "x.py:z", "n.py:b"], "rbench"),
    )
    file_keys = [k for k in own if not k.startswith(("function_", "module_"))]
    assert {k: loc[k] for k in file_keys} == {k: own[k] for k in file_keys}
    assert own["Acc@1"] == 0.0  # files keep "all gold in the top k"


def _derived(old: str, new: str) -> Example:
    """The fixture file's change ``old`` → ``new`` as a question with both golds."""
    from retrieval_bench.datasets.gold_functions import gold_entities
    from retrieval_bench.datasets.gold_locagent import locagent_entities
    from tests.unit.datasets.test_gold_locagent import BASE, edit, patch_to

    patch, source = patch_to(edit(old, new)), {"m.py": BASE}.get
    own, theirs = gold_entities(patch, source), locagent_entities(patch, source)
    return Example(
        "q", "?", ("m.py",), gold_functions=tuple(own), gold_functions_locagent=tuple(theirs)
    )


@pytest.mark.parametrize(
    ("old", "new", "ranked", "locagent", "rbench"),
    [
        # an import line inside f: LocAgent skips it (no gold: left out), ours names f
        ("    y = x + 1\n", "    import os\n    y = x + 1\n", ["m.py:f"], None, 1.0),
        # a comment line in C.m
        ("        # a comment\n", "        # another comment\n", ["m.py:C.m"], None, 1.0),
        # a decorator line above g
        ("@cache\n", "@cache(2)\n", ["m.py:g"], None, 1.0),
        # a class attribute of C
        ("    limit = 3\n", "    limit = 4\n", ["m.py:C"], None, 1.0),
        # a created method beside a changed one: ours {C, C.m}, LocAgent's {C.m}
        (
            "    def m(self):\n        # a comment\n        return self.n\n",
            "    def added(self):\n        return 0\n\n    def m(self):\n        # a comment\n"
            "        return self.n + 1\n",
            ["m.py:C.m", "m.py:g"],
            1.0,
            0.0,
        ),
    ],
)
def test_each_derivation_rule_gives_different_numbers(
    old: str, new: str, ranked: list[str], locagent: float | None, rbench: float
) -> None:
    """function Acc@1 of the same ranking under each convention's own gold (None: the
    question has no gold function under LocAgent's rules and is left out)."""
    ex = _derived(old, new)
    assert scores(ex, ranked, "rbench")["function_Acc@1"] == rbench
    assert scores(ex, ranked, "locagent").get("function_Acc@1") == locagent

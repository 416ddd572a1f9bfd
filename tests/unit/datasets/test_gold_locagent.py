"""Gold functions by LocAgent's rules beside this project's, one fixture per rule
where they differ, hand-computed (docs/metrics.md#conventions)."""

from __future__ import annotations

import difflib

import pytest

from retrieval_bench.datasets.gold_functions import gold_entities
from retrieval_bench.datasets.gold_locagent import locagent_entities, structure

BASE = '''\
import os


def f(x):
    y = x + 1
    return y


@cache
def g(x):
    return x


class C:
    """A class.

    Two lines more."""

    limit = 3

    def __init__(self):
        self.n = 0

    def m(self):
        # a comment
        return self.n

    class Inner:
        def deep(self):
            return 1


def outer():
    def nested():
        return 2
    return nested()
'''


def patch_to(new: str, old: str = BASE) -> str:
    diff = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), "a/m.py", "b/m.py"
    )
    return "".join(diff)


def both(new: str) -> tuple[list[str], list[str]]:
    """(LocAgent's gold, this project's gold) of the patch turning BASE into ``new``."""
    patch, source = patch_to(new), {"m.py": BASE}.get
    return locagent_entities(patch, source), gold_entities(patch, source)


def edit(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


def test_structure_as_ast_sees_it() -> None:
    s = structure(BASE)
    assert s is not None
    # decorators lie outside g (its def line is 10); classes with their direct methods
    assert ("g", (10, 11)) in s.functions
    assert [(c, span, [m for m, _ in ms]) for c, span, ms in s.classes] == [
        ("C", (14, 30), ["__init__", "m"]),
        ("Inner", (28, 30), ["deep"]),
    ]
    assert [n for n, _ in s.functions] == ["f", "g", "outer", "nested"]
    assert s.is_skipped(1)  # import
    assert s.is_skipped(15) and s.is_skipped(17) and not s.is_skipped(18)  # class docstring


@pytest.mark.parametrize(
    ("old", "new", "locagent", "rbench"),
    [
        # a plain change inside a function: the same under both
        ("    y = x + 1\n", "    y = x + 2\n", ["m.py:f"], ["m.py:f"]),
        # an import line inside a function is skipped by LocAgent
        ("    y = x + 1\n", "    import os\n    y = x + 1\n", [], ["m.py:f"]),
        # a comment line, and a blank line, are skipped
        ("        # a comment\n", "        # another comment\n", [], ["m.py:C.m"]),
        ("    y = x + 1\n", "    y = x + 1\n\n", [], ["m.py:f"]),
        # decorator lines lie outside the function (at module level: nothing)
        ("@cache\n", "@cache(2)\n", [], ["m.py:g"]),
        # a class-body line outside every method names nothing
        ("    limit = 3\n", "    limit = 4\n", [], ["m.py:C"]),
        # a class docstring is skipped
        ("    Two lines more.", "    Two more lines.", [], ["m.py:C"]),
        # a nested class's method: LocAgent reads C's body first (nothing)
        ("            return 1\n", "            return 5\n", [], ["m.py:C.Inner.deep"]),
        # a method the patch creates is not gold; here it names its class
        (
            "    def m(self):\n",
            "    def added(self):\n        return 0\n\n    def m(self):\n",
            [],
            ["m.py:C"],
        ),
        # a nested function's line names its outer function under both
        ("        return 2\n", "        return 3\n", ["m.py:outer"], ["m.py:outer"]),
        # __init__ keeps its name in the gold (the evaluation folds it)
        ("        self.n = 0\n", "        self.n = 1\n", ["m.py:C.__init__"], ["m.py:C.__init__"]),
    ],
)
def test_rules_by_hand(old: str, new: str, locagent: list[str], rbench: list[str]) -> None:
    assert both(edit(old, new)) == (locagent, rbench)


def test_lines_appended_to_an_existing_function_name_it_under_both() -> None:
    new = edit("        return self.n\n", "        self.n += 1\n        return self.n\n")
    assert both(new) == (["m.py:C.m"], ["m.py:C.m"])


def test_a_file_python_cannot_parse_names_nothing_under_locagent() -> None:
    broken = BASE.replace("def outer():", "def outer(:")
    patch = patch_to(broken.replace("        return 2", "        return 3"), broken)
    assert locagent_entities(patch, {"m.py": broken}.get) == []

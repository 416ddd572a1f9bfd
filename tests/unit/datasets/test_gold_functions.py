"""Gold functions and modules from a fix's patch, hand-computed on a fixture file
(docs/metrics.md#function-and-module-level)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from retrieval_bench.datasets.gold_functions import (
    at_commit,
    definitions,
    gold_entities,
    modules_of,
)
from retrieval_bench.errors import DatasetError
from tests.unit.datasets.gitrepo import GitRepo, needs_git

BASE = '''\
import os

LIMIT = 10


def helper(x):
    return x + 1


@cache
@other(1)
def decorated(y):
    return y


class Shop:
    """A shop."""

    rate = 2

    def price(self, qty):
        def inner(q):
            return q * self.rate
        return inner(qty)

    async def fetch(self):
        return await os.read()


def old_name():
    pass


def doomed():
    return 1
'''


def patch_of(new: str, path: str = "pkg/shop.py", old: str = BASE) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def gold(new: str) -> tuple[list[str], list[str]]:
    """The gold functions of the patch to ``new`` and their modules."""
    functions = gold_entities(patch_of(new), {"pkg/shop.py": BASE}.get)
    return functions, sorted(modules_of(functions))


def test_definitions_with_their_chains_and_decorated_spans() -> None:
    defs = {d.name: (d.start, d.end) for d in definitions(BASE)}
    assert {d.name: d.entity for d in definitions(BASE)}["Shop.price.inner"] == "Shop.price"
    assert defs == {
        "helper": (6, 7),
        "decorated": (10, 13),  # the decorators are part of it
        "Shop": (16, 27),
        "Shop.price": (21, 24),
        "Shop.price.inner": (22, 23),
        "Shop.fetch": (26, 27),
        "old_name": (30, 31),
        "doomed": (34, 35),
    }


@pytest.mark.parametrize(
    ("old", "new", "functions", "modules"),
    [
        # a changed method line
        ("        return inner(qty)\n", "        return inner(qty) + 0\n",
         ["pkg/shop.py:Shop.price"], ["pkg/shop.py:Shop"]),
        # a changed line of a function nested in a method: the method (its first function)
        ("            return q * self.rate\n", "            return q * self.rate * 2\n",
         ["pkg/shop.py:Shop.price"], ["pkg/shop.py:Shop"]),
        # a decorator line belongs to the decorated function
        ("@other(1)\n", "@other(2)\n", ["pkg/shop.py:decorated"], ["pkg/shop.py:decorated"]),
        # a class attribute: the class itself
        ("    rate = 2\n", "    rate = 3\n", ["pkg/shop.py:Shop"], ["pkg/shop.py:Shop"]),
        # module-level code names no function
        ("LIMIT = 10\n", "LIMIT = 11\n", [], []),
        ("import os\n", "import os\nimport sys\n", [], []),
        # a renamed definition is gold under its base name
        ("def old_name():\n", "def new_name():\n",
         ["pkg/shop.py:old_name"], ["pkg/shop.py:old_name"]),
        # a deleted definition is gold
        ("\n\ndef doomed():\n    return 1\n", "", ["pkg/shop.py:doomed"], ["pkg/shop.py:doomed"]),
        # lines appended at the end of a method: that method (in the patched version)
        ("        return await os.read()\n",
         "        return await os.read()\n        # done\n        log()\n",
         ["pkg/shop.py:Shop.fetch"], ["pkg/shop.py:Shop"]),
        # a new top-level function names nothing: it is not in the base version
        ("def helper(x):\n", "def added():\n    pass\n\n\ndef helper(x):\n", [], []),
        # a method added to a class names the class (its nearest base definition)
        ("    rate = 2\n", "    rate = 2\n\n    def added(self):\n        return 1\n",
         ["pkg/shop.py:Shop"], ["pkg/shop.py:Shop"]),
        # a function nested into a method by the patch names the method
        ("        return inner(qty)\n",
         "        def more():\n            pass\n        return inner(qty)\n",
         ["pkg/shop.py:Shop.price"], ["pkg/shop.py:Shop"]),
    ],
)  # fmt: skip
def test_patches_by_hand(old: str, new: str, functions: list[str], modules: list[str]) -> None:
    assert BASE.count(old) == 1
    assert gold(BASE.replace(old, new)) == (functions, modules)


def test_several_files_and_files_outside_the_base() -> None:
    other = "def run():\n    return 0\n"
    patch = patch_of(BASE.replace("    return x + 1\n", "    return x + 2\n"))
    patch += patch_of("def run():\n    return 1\n", "pkg/run.py", other)
    patch += patch_of("def new():\n    pass\n", "pkg/new.py", "")  # an added file
    patch += patch_of("x = 2\n", "README.txt", "x = 1\n")  # not Python
    base = {"pkg/shop.py": BASE, "pkg/run.py": other}
    functions = gold_entities(patch, base.get)
    assert (functions, sorted(modules_of(functions))) == (
        ["pkg/run.py:run", "pkg/shop.py:helper"],
        ["pkg/run.py:run", "pkg/shop.py:helper"],
    )


def test_modules_and_bad_patches() -> None:
    assert modules_of(["a.py:C.m.inner", "a.py:f", "b/c.py:C"]) == {"a.py:C", "a.py:f", "b/c.py:C"}
    with pytest.raises(DatasetError, match="unified diff"):
        gold_entities("@@ -1,2 +1,2 @@\nnot a diff", {}.get)


@needs_git
def test_a_commit_git_would_read_as_an_option_reads_nothing(tmp_path: Path) -> None:
    """``git show --output=FILE:path`` wrote a file; such a commit has no files."""
    repo = GitRepo(tmp_path / "r")
    sha = repo.commit("first", {"a.py": "x = 1\n"})
    assert at_commit(repo.path, sha)("a.py") == "x = 1\n"
    out = tmp_path / "written"
    assert at_commit(repo.path, f"--output={out}")("a.py") is None
    assert not list(tmp_path.glob("written*"))

"""SWE-bench import: which files a patch modifies, hunk spans, row errors."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval_bench.datasets.swebench import (
    gold_from_patch,
    is_test_path,
    load_swebench,
    parse_patch,
)
from retrieval_bench.types import Span
from tests.unit.datasets.gitrepo import GitRepo, needs_git

PATCH = """\
diff --git a/src/mod.py b/src/mod.py
index 1111111..2222222 100644
--- a/src/mod.py
+++ b/src/mod.py
@@ -10,7 +10,8 @@ def f():
     a = 1
     b = 2
-    c = 3
+    c = 4
+    d = 5
--- a SQL-ish comment line that was removed
     e = 6
     g = 7
@@ -40 +41 @@ class K:
-    x = 1
+    x = 2
diff --git a/src/new.py b/src/new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1,2 @@
+def new():
+    pass
diff --git a/src/old.py b/src/old.py
deleted file mode 100644
index 4444444..0000000
--- a/src/old.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def old():
-    pass
diff --git a/src/before.py b/src/after.py
similarity 90%
rename from src/before.py
rename to src/after.py
index 5555555..6666666 100644
--- a/src/before.py
+++ b/src/after.py
@@ -3,0 +4 @@ def h():
+    return 1
\\ No newline at end of file
diff --git a/src/moved.py b/pkg/moved.py
similarity index 100%
rename from src/moved.py
rename to pkg/moved.py
diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -1,3 +1,3 @@
 import mod
-assert mod.f() == 3
+assert mod.f() == 4
 # end
"""


def test_parse_patch_statuses() -> None:
    diffs = parse_patch(PATCH)
    got = [(d.status, d.old_path, d.new_path) for d in diffs]
    assert got == [
        ("M", "src/mod.py", "src/mod.py"),
        ("A", None, "src/new.py"),
        ("D", "src/old.py", None),
        ("R", "src/before.py", "src/after.py"),
        ("R", "src/moved.py", "pkg/moved.py"),
        ("M", "tests/test_mod.py", "tests/test_mod.py"),
    ]
    # the removed "-- ..." line inside the hunk was not taken for a file header
    assert [(h.old_start, h.old_len) for h in diffs[0].hunks] == [(10, 7), (40, 1)]


def test_gold_files_and_spans_from_patch() -> None:
    files, spans = gold_from_patch(PATCH)
    assert files == ("src/mod.py", "src/before.py", "src/moved.py", "tests/test_mod.py")
    assert spans == (
        Span("src/mod.py", 10, 16),
        Span("src/mod.py", 40, 40),
        Span("src/before.py", 3, 3),  # pure insertion after line 3
        Span("tests/test_mod.py", 1, 3),
    )
    files, _ = gold_from_patch(PATCH, drop_tests=True)
    assert files == ("src/mod.py", "src/before.py", "src/moved.py")


def test_plain_unified_diff_without_git_headers() -> None:
    patch = (
        "--- a/one.py\t2024-01-01 00:00:00\n+++ b/one.py\t2024-01-02 00:00:00\n"
        "@@ -1,2 +1,2 @@\n-x\n+y\n z\n"
        "--- a/two.py\n+++ b/two.py\n@@ -5,1 +5,1 @@\n-p\n+q\n"
    )
    assert gold_from_patch(patch) == (
        ("one.py", "two.py"),
        (Span("one.py", 1, 2), Span("two.py", 5, 5)),
    )


def test_quoted_paths() -> None:
    patch = (
        'diff --git "a/caf\\303\\251 x.py" "b/caf\\303\\251 x.py"\n'
        '--- "a/caf\\303\\251 x.py"\n+++ "b/caf\\303\\251 x.py"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    assert gold_from_patch(patch)[0] == ("café x.py",)


def test_is_test_path() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/testing/util.py")
    assert is_test_path("pkg/test_utils.py") and is_test_path("conftest.py")
    assert is_test_path("src/x_test.go")
    assert not is_test_path("src/attest.py") and not is_test_path("src/contest/x.py")


@needs_git
def test_agrees_with_git_name_status(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    lines = "".join(f"line {i}\n" for i in range(1, 40))
    repo.commit("base", {"a.py": lines, "b.py": lines, "c.py": lines, "d.py": "gone\n"})
    repo.write({"a.py": lines.replace("line 5\n", "five\n"), "d.py": None, "e.py": "new\n"})
    repo.git("mv", "b.py", "b2.py")
    repo.write({"b2.py": lines.replace("line 30\n", "thirty\n")})
    repo.git("add", "-A")
    patch = repo.git("diff", "--cached", "-M") + "\n"
    status = repo.git("diff", "--cached", "-M", "--name-status").splitlines()
    expected = sorted(
        line.split("\t")[1] for line in status if line[0] in "MR" and line[:4] != "R100"
    )
    files, spans = gold_from_patch(patch)
    assert sorted(files) == expected == ["a.py", "b.py"]
    assert Span("a.py", 2, 8) in spans and Span("b.py", 27, 33) in spans


def _row(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "instance_id": "org__proj-1",
        "repo": "org/proj",
        "base_commit": "a" * 40,
        "problem_statement": "Calling f() returns 3 instead of 4.",
        "patch": PATCH,
    }
    base.update(over)
    return base


def test_load_jsonl_rows_with_errors(tmp_path: Path) -> None:
    rows = [
        json.dumps(_row()),
        json.dumps(_row(instance_id="org__proj-2", patch=None)),
        "not json",
        json.dumps(_row(instance_id="org__proj-4", repo="")),
        json.dumps(_row(instance_id="org__proj-5", patch=PATCH.split("diff --git a/src/old")[0])),
        json.dumps(
            _row(instance_id="org__proj-6", patch="--- /dev/null\n+++ b/x.py\n@@ -0,0 +1 @@\n+x\n")
        ),
        json.dumps(_row()),
    ]
    path = tmp_path / "swe.jsonl"
    path.write_text("\n".join(rows) + "\n")
    result = load_swebench(path)
    assert [e.id for e in result.examples] == ["org__proj-1", "org__proj-5"]
    first = result.examples[0]
    assert first.query.startswith("Calling f()")
    assert first.meta == {"repo": "org/proj", "commit": "a" * 40}
    assert result.examples[1].gold_files == ("src/mod.py",)
    errors = {e.line_no: e.message for e in result.errors}
    assert sorted(errors) == [2, 3, 4, 6, 7]
    assert "patch" in errors[2] and "org__proj-2" in errors[2]
    assert "invalid JSON" in errors[3]
    assert "repo" in errors[4]
    assert "modifies no existing file" in errors[6]
    assert "duplicate instance_id" in errors[7]


def test_load_json_array_with_test_filter(tmp_path: Path) -> None:
    test_only = "--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-a\n+b\n"
    path = tmp_path / "swe.json"
    path.write_text(json.dumps([_row(), _row(instance_id="t", patch=test_only)]))
    result = load_swebench(path, drop_tests=True)
    assert [e.id for e in result.examples] == ["org__proj-1"]
    assert "tests/test_mod.py" not in result.examples[0].gold_files
    assert [(e.line_no, "non-test" in e.message) for e in result.errors] == [(2, True)]


def test_gold_functions_from_a_local_clone(tmp_path: Path) -> None:
    """``--repo owner/name=PATH``: the patch on the base commit's files names the
    edited method; a row of another repository gets none; test files are not gold."""
    from retrieval_bench.datasets.swebench import git_base_source, import_rows
    from tests.unit.datasets.gitrepo import GitRepo

    clone = GitRepo(tmp_path / "proj")
    src = "class Shop:\n    def price(self):\n        return 1\n\n\ndef free():\n    return 0\n"
    base = clone.commit("Initial import of the shop", {"shop.py": src, "test_shop.py": "x = 1\n"})
    base = clone.git("rev-parse", "HEAD").strip()
    (clone.path / "shop.py").write_text(src.replace("return 1", "return 2"))
    (clone.path / "test_shop.py").write_text("x = 2\n")
    patch = clone.git("diff")
    row = {"instance_id": "org__proj-1", "repo": "org/proj", "base_commit": base,
           "problem_statement": "price is wrong", "patch": patch}  # fmt: skip
    other = {**row, "instance_id": "org__other-2", "repo": "org/other"}
    source = git_base_source({"org/proj": clone.path})
    result = import_rows(enumerate([row, other], start=1), drop_tests=True, base_source=source)
    by_id = {e.id: e for e in result.examples}
    assert by_id["org__proj-1"].gold_functions == ("shop.py:Shop.price",)
    assert by_id["org__other-2"].gold_functions == ()
    assert not result.errors

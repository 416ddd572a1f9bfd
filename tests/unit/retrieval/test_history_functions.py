"""``history`` with ``signal: similar-functions``: git's hunk headers name the changed
definitions, the snapshot's files name the entities (docs/stages.md#similar-functions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.retrieval.history import HistoryRetriever
from retrieval_bench.retrieval.history_hunks import (
    HunkCache,
    forget_hunk_logs,
    hunk_log,
    parse_patch_log,
)
from retrieval_bench.retrieval.history_log import forget_logs, repo_log
from retrieval_bench.snapshot.sources import open_repo
from tests.unit.datasets.gitrepo import GitRepo, needs_git
from tests.unit.retrieval.conftest import window_corpus

RS = "\x1e"
PATCH = f"""{RS}aaaa
diff --git a/pkg/m.py b/pkg/m.py
index 1..2 100644
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -10 +10 @@ def body_change(x):
-    return x
+    return x + 1
@@ -20,2 +20,2 @@ def before(y):
-def signature(a):
+def signature(a, b):
@@ -30,0 +31,4 @@ class Owner:
+
+    @property
+    def added(self):
+        return 1
@@ -40 +44 @@ class Owner:
-    +++weird = 1
+    ---weird = 2
diff --git a/pkg/gone.py b/pkg/gone.py
deleted file mode 100644
--- a/pkg/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def gone():
-    pass
diff --git a/notes.txt b/notes.txt
--- a/notes.txt
+++ b/notes.txt
@@ -1 +1 @@ def looks_like_python():
-a
+b
{RS}bbbb
"""


def test_hunk_headers_and_changed_lines_name_the_definitions() -> None:
    got = parse_patch_log(PATCH)
    # body_change: the header; signature: its own def line (the header names the one
    # before, untouched); added: a new method after a decorator, in the class the header
    # names (the header itself left out); a line starting +++/--- inside a hunk is
    # content; a deleted file and a file that is not Python name nothing; a commit with
    # no hunk maps to ()
    assert got == {
        "aaaa": (("pkg/m.py", ("body_change", "signature", "Owner.added", "Owner")),),
        "bbbb": (),
    }


METHODS = f"""{RS}cccc
diff --git a/m.py b/m.py
--- a/m.py
+++ b/m.py
@@ -5 +5 @@     def method(self):
-        return 1
+        return 2
@@ -9 +9 @@         def nested(x):
-            return x
+            return -x
@@ -20,0 +21,5 @@ def top():
+
+class Fresh:
+    def made(self):
+        pass
+def loose():
"""
CLASSES = {"cccc": ["class Box(Base):", "class Box(Base):", "class Box(Base):"]}


def test_the_second_pass_qualifies_methods_by_their_top_level_class() -> None:
    # the indented header is a method of the nearest top-level class; a nested def is
    # qualified too (the stage falls back to its bare name); a top-level class or def
    # among the changed lines sets or ends the qualifying class (and, first, leaves the
    # header ``top`` out: the hunk adds after it)
    assert parse_patch_log(METHODS, CLASSES) == {"cccc": (("m.py", (
        "Box.method", "Box.nested", "Fresh", "Fresh.made", "loose",
    )),)}  # fmt: skip
    # without the second pass (or when its hunks do not match), names stay bare
    assert parse_patch_log(METHODS)["cccc"][0][1][:2] == ("method", "nested")
    assert parse_patch_log(METHODS, {"cccc": ["class Box:"]})["cccc"][0][1][:2] == (
        "method", "nested",
    )  # fmt: skip


PARSER_V1 = """class Parser:
    def parse(self, text):
        def inner(ch):
            return ch
        return [inner(c) for c in text]

    def reset(self):
        return None


def other():
    return 1
"""
PARSER_V2 = PARSER_V1.replace("return ch\n", "return ch.strip()\n")
PARSER_V3 = PARSER_V2.replace("def other():\n    return 1", "def other():\n    return 2")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[GitRepo, list[str]]:
    forget_logs()
    forget_hunk_logs()
    git = GitRepo(tmp_path / "proj")
    shas = [
        git.commit("initial project layout", {"src/parse.py": PARSER_V1, "src/x.py": "X = 1\n"}),
        git.commit("fix parser crash on unicode input", {"src/parse.py": PARSER_V2}),
        git.commit("move the module", {"src/parse.py": None, "src/parsing.py": PARSER_V2}),
        git.commit("tidy other", {"src/parsing.py": PARSER_V3}),
    ]
    return git, shas


def _stage(repo: tuple[GitRepo, list[str]], tmp_path: Path, **params: object) -> HistoryRetriever:
    git, shas = repo
    cache = tmp_path / "cache"
    snap = open_repo("org/proj", shas[3], cache / "snapshots", source=str(git.path))
    corpus = window_corpus(snap.root)
    corpus.cache_dir = cache
    stage = HistoryRetriever(snapshot=snap, **params)
    stage.index(corpus)
    return stage


@needs_git
def test_the_fix_names_the_outer_method_at_its_new_path(repo, tmp_path) -> None:
    fn = _stage(repo, tmp_path, signal="similar-functions", half_life=2)
    files = _stage(repo, tmp_path, signal="similar-fixes", half_life=2)
    got = fn.search({"q": "parser crash"}, 10).scores["q"]
    by_file = files.search({"q": "parser crash"}, 10).scores["q"]
    # the one similar commit changed one file and, in it, the nested ``Parser.inner``
    # (the header): the file has no such entity, so the line of ``inner`` names it, held
    # by Parser.parse, now in src/parsing.py; one
    # file, one definition, so its score is the file signal's
    assert list(got) == ["entity:src/parsing.py:Parser.parse"]
    assert got["entity:src/parsing.py:Parser.parse"] == pytest.approx(
        by_file["file:src/parsing.py"], rel=1e-12
    )
    assert fn.artifacts["q"]["similar"][0][0] == repo[1][1][:12]
    assert fn.search({"q": "nothing matches"}, 10).scores["q"] == {}
    assert HistoryRetriever.ranks_for({"signal": "similar-functions"}, []) == "chunks"
    assert HistoryRetriever.ranks_for({}, []) == "files"


@needs_git
def test_a_whole_file_commit_shares_among_its_definitions(repo, tmp_path) -> None:
    got = _stage(repo, tmp_path, signal="similar-functions", half_life=0)
    scores = got.search({"q": "initial layout"}, 10).scores["q"]
    # c1 added both files: every def/class line of parse.py names a definition (Parser,
    # parse, inner → Parser.parse, reset, other); x.py has none
    assert set(scores) == {
        "entity:src/parsing.py:Parser",
        "entity:src/parsing.py:Parser.parse",
        "entity:src/parsing.py:Parser.reset",
        "entity:src/parsing.py:other",
    }
    parse, reset = (scores[f"entity:src/parsing.py:Parser.{n}"] for n in ("parse", "reset"))
    assert parse == pytest.approx(2 * reset, rel=1e-12)  # parse and inner both name it
    assert scores["entity:src/parsing.py:other"] == pytest.approx(reset, rel=1e-12)


@needs_git
def test_the_names_are_read_once_and_cached(repo, tmp_path) -> None:
    stage = _stage(repo, tmp_path, signal="similar-functions")
    stage.search({"q": "parser crash"}, 5)
    assert stage._hunks is not None and stage._hunks.read_from_git == 4
    assert stage.history is not None
    git_dir = stage.history.log.git_dir
    forget_logs()
    forget_hunk_logs()
    log = repo_log(git_dir, tmp_path / "cache" / "history")
    again = hunk_log(log, tmp_path / "cache" / "history")
    assert again.names_of(log.chain(repo[1][3]))[2][0][0] == "src/parse.py"  # c2, newest first
    assert again.read_from_git == 0
    cache = HunkCache.shared(tmp_path / "cache" / "history" / "hunks.sqlite")
    cache.insert_many(cache.insert, [(log.key, repo[1][1], "not json")])
    forget_hunk_logs()
    fresh = hunk_log(log, tmp_path / "cache" / "history")
    assert repo[1][1] not in fresh.names  # the damaged row is dropped, read again on demand
    assert fresh.names_of(log.chain(repo[1][1]))[0] == (("src/parse.py", ("Parser.inner",)),)

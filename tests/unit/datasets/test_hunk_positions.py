"""Hunks located by their context lines in the base file, hand-computed
(docs/datasets.md#hunk-positions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from unidiff import PatchSet

from retrieval_bench.cli import main
from retrieval_bench.datasets.gold_functions import file_changes, gold_entities
from retrieval_bench.datasets.gold_locagent import locagent_entities
from retrieval_bench.datasets.hunk_positions import HunkError, locate_hunks
from retrieval_bench.datasets.swebench import example_from_swebench
from tests.unit.datasets.gitrepo import GitRepo, needs_git

FILLER = [f"# filler {i}" for i in range(30)]
BASE = "\n".join(
    ["def first(x):", "    return x + 1", "", *FILLER, "", "def second(y):",
     "    a = y * 2", "    b = a - 3", "    return b", ""]
) + "\n"  # fmt: skip
# second() sits at lines 35-38; the hunk says line 5 (the diff was made on a file
# without the 30 filler lines)
OFFSET_PATCH = (
    "--- a/m.py\n+++ b/m.py\n@@ -5,4 +5,4 @@ def second(y):\n"
    "     a = y * 2\n-    b = a - 3\n+    b = a - 4\n     return b\n \n"
)  # the last context line is the blank line after second()


def located(base: str, patch: str) -> list[tuple[int, int]]:
    (pf,) = PatchSet(patch)
    return [(h.start, h.offset) for h in locate_hunks(base, pf, "m.py")]


def test_a_hunk_found_31_lines_below_its_header() -> None:
    assert located(BASE, OFFSET_PATCH) == [(35, 31)]  # 0-based line 35 = line 36


def test_the_offset_names_the_changed_function_under_both_conventions() -> None:
    assert gold_entities(OFFSET_PATCH, {"m.py": BASE}.get) == ["m.py:second"]
    assert locagent_entities(OFFSET_PATCH, {"m.py": BASE}.get) == ["m.py:second"]


def test_a_hunk_at_its_header_stays_there() -> None:
    patch = OFFSET_PATCH.replace("@@ -5,4 +5,4 @@", "@@ -36,4 +36,4 @@")
    assert located(BASE, patch) == [(35, 0)]


def test_the_nearest_match_wins_and_the_offset_carries_to_the_next_hunk() -> None:
    # x, y, q sit at lines 1, 4 and 9; a header saying 5 finds line 4 (one up) first
    base = "x\ny\nq\nx\ny\nq\nr\nr\nx\ny\nq\n"
    assert located(base, "--- a/m.py\n+++ b/m.py\n@@ -5,3 +5,3 @@\n x\n-y\n+Y\n q\n") == [(3, -1)]
    # two hunks: the first found 2 lines up, the second searched from its header
    # moved by those -2 lines (line 5): `z = 3` at line 3 (2 away) beats line 8 (3
    # away), though line 8 is nearer the header's own line 7
    two = (
        "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n-x = 1\n+x = 9\n y = 2\n"
        "@@ -7,2 +7,2 @@\n-z = 3\n+z = 4\n q\n"
    )
    base = "x = 1\ny = 2\nz = 3\n" + "q\n" * 4 + "z = 3\nq\nend\n"
    assert located(base, two) == [(0, -2), (2, -4)]
    # at equal distance, forward first: `z = 3` at lines 3 and 7, searched from 5
    tie = "x = 1\ny = 2\nz = 3\n" + "q\n" * 3 + "z = 3\nq\nend\n"
    assert located(tie, two) == [(0, -2), (6, 0)]


def test_hunks_at_the_start_or_end_of_the_file_stay_anchored_there_as_in_git() -> None:
    # a header at line 1 must match at the beginning; no trailing context: at the end
    first = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
    assert located("a\nb\nc\n", first) == [(0, 0)]
    with pytest.raises(HunkError, match="at the file.s beginning, as git apply requires"):
        located("z\na\nb\n", first)
    last = "--- a/m.py\n+++ b/m.py\n@@ -2,2 +2,2 @@\n a\n-b\n+B\n"
    assert located("x\ny\na\nb\n", last) == [(2, 1)]
    with pytest.raises(HunkError, match="at the file.s end, as git apply requires"):
        located("x\na\nb\nc\n", last)


def test_a_hunk_whose_lines_are_not_there_fails_clearly() -> None:
    patch = OFFSET_PATCH.replace("    b = a - 3", "    b = a - 7", 1)
    with pytest.raises(HunkError, match=r"hunk 1 of m.py \(@@ -5,4\) does not apply"):
        located(BASE, patch)


def test_a_pure_insertion_keeps_its_header_moved_by_the_previous_offset() -> None:
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -5,2 +5,2 @@\n-    b = a - 3\n+    b = a - 4\n"
        "     return b\n@@ -7,0 +8,1 @@\n+    c = 1\n"
    )
    assert located(BASE, patch) == [(36, 32), (39, 32)]


def test_swebench_rows_get_located_spans_and_a_clear_row_error() -> None:
    row = {"instance_id": "o__m-1", "repo": "o/m", "base_commit": "c0",
           "problem_statement": "second() subtracts a constant", "patch": OFFSET_PATCH}  # fmt: skip

    def base(repo: str, commit: str, path: str) -> str | None:
        return BASE if path == "m.py" else None

    ex = example_from_swebench(row, base_source=base)
    assert ex.gold_functions == ("m.py:second",)
    assert ex.gold_functions_locagent == ("m.py:second",)
    assert [(s.start_line, s.end_line) for s in ex.gold_spans] == [(36, 39)]
    # without the base files: the header's lines, no functions
    plain = example_from_swebench(row)
    assert [(s.start_line, s.end_line) for s in plain.gold_spans] == [(5, 8)]
    assert plain.gold_functions_locagent is None
    bad = {**row, "patch": OFFSET_PATCH.replace("    b = a - 3", "    b = a - 7", 1)}
    with pytest.raises(ValueError, match=r"instance 'o__m-1': hunk 1 of m.py .* does not apply"):
        example_from_swebench(bad, base_source=base)


def test_no_newline_at_end_of_file_is_no_line_of_the_patched_file() -> None:
    base = "def f(x):\n    return x"  # no newline at the end
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n"
        "\\ No newline at end of file\n+    return x\n"
    )
    (change,) = file_changes(patch, {"m.py": base}.get)
    assert change.patched == "def f(x):\n    return x\n"
    assert locagent_entities(patch, {"m.py": base}.get) == ["m.py:f"]
    assert gold_entities(patch, {"m.py": base}.get) == ["m.py:f"]


@needs_git
def test_import_swebench_with_repo_locates_hunks_and_fails_only_the_bad_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command end to end: an offset hunk names ``second`` under both rule sets;
    a row whose hunk is not in the base file is a row error, the other row imports."""
    repo = GitRepo(tmp_path / "r")
    sha = repo.commit("base", {"m.py": BASE})
    bad_patch = OFFSET_PATCH.replace("    b = a - 3", "    b = a - 7", 1)
    rows = [
        {"instance_id": "o__m-1", "repo": "o/m", "base_commit": sha,
         "problem_statement": "second() is off", "patch": OFFSET_PATCH},
        {"instance_id": "o__m-2", "repo": "o/m", "base_commit": sha,
         "problem_statement": "second() is off again", "patch": bad_patch},
    ]  # fmt: skip
    src, out = tmp_path / "rows.jsonl", tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert (
        main(["dataset", "import-swebench", str(src), str(out), "--repo", f"o/m={repo.path}"]) == 0
    )
    printed = capsys.readouterr()
    assert "1 with gold functions, 1 by LocAgent's rules" in printed.out
    assert "hunk 1 of m.py (@@ -5,4) does not apply" in printed.err
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["gold_functions"] == row["gold_functions_locagent"] == ["m.py:second"]
    assert row["gold_spans"] == [{"path": "m.py", "start_line": 36, "end_line": 39}]

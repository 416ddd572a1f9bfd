"""Training documents and questions of ``rbench fit-dense`` (docs/stages.md#fit-dense):
definitions named as gold functions are, the path and class headers before the code,
and questions whose pool holds no positive nor anything holding or held by one."""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.dense_training.documents import definition_documents, related
from retrieval_bench.dense_training.questions import mine_questions
from tests.unit.datasets.gitrepo import GitRepo, needs_git

SOURCE = '''import os


@decorated
def top(a):
    def inner():
        return a
    return inner


class Shape:
    """A shape."""

    class Corner:
        def angle(self):
            return 90

    def area(self):
        return 0
'''


def test_documents_are_the_definitions_not_nested_in_a_function() -> None:
    docs = definition_documents("pkg/geo.py", SOURCE)
    assert [d.entity for d in docs] == [
        "pkg/geo.py:top",
        "pkg/geo.py:Shape",
        "pkg/geo.py:Shape.Corner",
        "pkg/geo.py:Shape.Corner.angle",
        "pkg/geo.py:Shape.area",
    ]
    by = {d.entity: d.text for d in docs}
    # the path, then the decorator line and the whole function with its nested one
    assert by["pkg/geo.py:top"] == (
        "pkg/geo.py\n@decorated\ndef top(a):\n    def inner():\n        return a\n    return inner"
    )
    # a method: its enclosing classes' headers before its own lines
    assert by["pkg/geo.py:Shape.Corner.angle"] == (
        "pkg/geo.py\nclass Shape:\n    class Corner:\n"
        "        def angle(self):\n            return 90"
    )
    assert by["pkg/geo.py:Shape.area"].startswith("pkg/geo.py\nclass Shape:\n    def area(self):")


def test_related_entities_hold_one_another() -> None:
    assert related("a.py:C", "a.py:C.m") and related("a.py:C.m", "a.py:C")
    assert related("a.py:f", "a.py:f")
    assert not related("a.py:C", "a.py:CD.m")
    assert not related("a.py:f", "b.py:f")


def _repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "lib")
    repo.commit("Add the shapes module and helpers", {
        "lib/geo.py": SOURCE,
        "lib/util.py": "def helper():\n    return 1\n\n\ndef other():\n    return 2\n",
        "tests/test_geo.py": "def test_area():\n    assert True\n",
    })  # fmt: skip
    fix = repo.commit(
        "Fix the area of a shape to be computed",
        {"lib/geo.py": SOURCE.replace("return 0", "return self.w * self.h")},
    )
    return repo, fix


@needs_git
def test_a_question_has_the_changed_function_as_positive_and_its_neighbours_as_pool(
    tmp_path: Path,
) -> None:
    repo, fix = _repo(tmp_path)
    mined = mine_questions(
        repo.path, "lib", last=10, max_questions=10, pool_files=5, pool_size=64, seed=0
    )
    assert len(mined.questions) == 1
    q = mined.questions[0]
    assert (q.id, q.repo, q.commit) == (f"lib-{fix[:10]}", "lib", fix)
    assert q.query == "Fix the area of a shape to be computed"
    assert [d.entity for d in q.positives] == ["lib/geo.py:Shape.area"]
    # the parent's text: the documents come from the snapshot the question is asked on
    assert "return 0" in q.positives[0].text
    pool = {d.entity for d in q.pool}
    # Shape holds the positive: no negative of it; its other members and the other
    # files' definitions (the test file's too: the index holds it) are
    assert pool == {
        "lib/geo.py:top", "lib/geo.py:Shape.Corner", "lib/geo.py:Shape.Corner.angle",
        "lib/util.py:helper", "lib/util.py:other", "tests/test_geo.py:test_area",
    }  # fmt: skip
    assert mined.first_commit == mined.last_commit == fix


@needs_git
def test_the_pool_keeps_the_changed_files_first_and_is_seeded(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)

    def pool(seed: int, size: int) -> list[str]:
        mined = mine_questions(
            repo.path, "lib", last=10, max_questions=10, pool_files=5, pool_size=size, seed=seed
        )
        return [d.entity for d in mined.questions[0].pool]

    small = pool(0, 3)
    assert len(small) == 3 and all(e.startswith("lib/geo.py:") for e in small)
    assert pool(0, 4) == pool(0, 4)
    assert len(pool(1, 64)) == 6


@needs_git
def test_a_change_of_no_function_is_no_question(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "lib")
    repo.commit("Add the shapes module and helpers", {"lib/geo.py": SOURCE})
    repo.commit("Import sys as well at the top", {"lib/geo.py": "import sys\n" + SOURCE})
    mined = mine_questions(repo.path, "lib", last=10, max_questions=10, pool_files=1,
                           pool_size=8, seed=0)  # fmt: skip
    assert mined.questions == []
    assert mined.dropped["no_gold_function"] == 1

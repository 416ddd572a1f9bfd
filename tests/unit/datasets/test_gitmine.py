"""Mining questions from a scripted git history."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.datasets.gitmine import MineOptions, clean_message, mine_examples
from retrieval_bench.errors import DatasetError
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = needs_git

CODE = "".join(f"line {i}\n" for i in range(1, 30))


def edit(text: str, tag: str) -> str:
    return text + f"# {tag}\n"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "proj")
    files = {f"src/m{i}.py": CODE for i in range(7)}
    files.update({"src/a.py": CODE, "src/b.py": CODE, "tests/test_a.py": CODE, "README.md": "x\n"})
    r.commit("Initial import of the project", files)
    return r


def test_mines_modified_code_files_with_filters(repo: GitRepo) -> None:
    a = edit(CODE, "1")
    good1 = repo.commit(
        "Fix the parser for nested brackets (#12)",
        {"src/a.py": a},
    )
    # a body with trailers: amend the message
    repo.git(
        "commit",
        "-q",
        "--amend",
        "-m",
        "Fix the parser for nested brackets (#12)",
        "-m",
        "Nested brackets were closed too early.",
        "-m",
        "Signed-off-by: Dev <dev@example.com>\nCo-authored-by: Other <o@example.com>",
    )
    good1 = repo.git("rev-parse", "HEAD")
    repo.commit("Add a brand new config module", {"src/new.py": CODE})  # only adds
    repo.commit("Bump version to 1.2.0 for release", {"src/a.py": edit(a, "2")})
    repo.commit("fix typo in the parser module", {"src/b.py": edit(CODE, "t")})
    repo.commit(
        "Update dependency pins for the build",
        {"src/b.py": edit(CODE, "bot")},
        author="dependabot[bot] <bot@example.com>",
    )
    repo.commit('Revert "Fix the parser for nested brackets"', {"src/a.py": a})
    repo.commit("Tweak the parser", {"src/a.py": edit(a, "short")})  # 3 words
    repo.commit("Document the readme much better now", {"README.md": "y\n"})
    repo.git("mv", "src/b.py", "src/b2.py")
    good2 = repo.commit(
        "Handle empty input in helper and tests",
        {"src/b2.py": edit(CODE, "moved"), "tests/test_a.py": edit(CODE, "t")},
    )
    many = {f"src/m{i}.py": edit(CODE, "many") for i in range(7)}
    repo.commit("Rework every module at the same time", many)
    repo.commit("Handle empty input in helper and tests", {"src/a.py": edit(a, "dup")})

    result = mine_examples(repo.path)
    ids = [e.id for e in result.examples]
    assert ids == [f"proj-{good1[:10]}", f"proj-{good2[:10]}"]
    first, second = result.examples
    assert (
        first.query
        == "Fix the parser for nested brackets\n\nNested brackets were closed too early."
    )
    assert first.gold_files == ("src/a.py",)
    assert first.meta == {"commit": good1}
    assert second.gold_files == ("src/b.py",)  # renamed and edited: old path; tests excluded
    assert result.dropped == {
        "root_commit": 1,
        "no_modified_code_file": 2,
        "skipped_title": 3,
        "bot_author": 1,
        "short_title": 1,
        "too_many_modified_code_files": 1,
        "duplicate_title": 1,
    }


def test_split_every_fifth_and_ranges(repo: GitRepo) -> None:
    text = CODE
    shas = []
    for i in range(11):
        text = edit(text, str(i))
        shas.append(repo.commit(f"Improve the widget handling number {i}", {"src/a.py": text}))
    result = mine_examples(repo.path, id_prefix="w:")
    assert [e.split for e in result.examples] == ["dev"] * 4 + ["test"] + ["dev"] * 4 + [
        "test",
        "dev",
    ]
    assert result.examples[0].id == f"w:{shas[0][:10]}"
    assert [e.meta["commit"] for e in mine_examples(repo.path, last=3).examples] == shas[-3:]
    ranged = mine_examples(repo.path, f"{shas[1]}..{shas[4]}").examples
    assert [e.meta["commit"] for e in ranged] == shas[2:5]
    all_dev = mine_examples(repo.path, options=MineOptions(test_every=0)).examples
    assert {e.split for e in all_dev} == {"dev"}


def test_merges_skipped_or_counted_against_first_parent(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Teach the loader about gzip files", {"src/b.py": edit(CODE, "gz")})
    repo.git("checkout", "-q", "main")
    repo.commit("Speed up the tokenizer inner loop", {"src/a.py": edit(CODE, "fast")})
    repo.git(
        "merge",
        "-q",
        "--no-ff",
        "feature",
        "-m",
        "Merge pull request #7 from someone/feature",
        "-m",
        "Support gzip files in the loader",
    )
    skipped = mine_examples(repo.path)
    assert [e.query for e in skipped.examples] == ["Speed up the tokenizer inner loop"]
    assert skipped.dropped["merge"] == 1
    kept = mine_examples(repo.path, options=MineOptions(skip_merges=False))
    assert [(e.query, e.gold_files) for e in kept.examples] == [
        ("Speed up the tokenizer inner loop", ("src/a.py",)),
        ("Support gzip files in the loader", ("src/b.py",)),
    ]


def test_clean_message_removes_trailers() -> None:
    title, query = clean_message(
        "Make it faster (#99)",
        "Details here.\n\n\n\nReviewed-by: A <a@x>\nSigned-off-by: B <b@x>\nChange-Id: I123\n",
    )
    assert title == "Make it faster"
    assert query == "Make it faster\n\nDetails here."


def test_errors_name_the_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(DatasetError, match="cannot read the history of .*plain"):
        mine_examples(plain)
    with pytest.raises(DatasetError, match="not a directory"):
        mine_examples(tmp_path / "missing")


def test_mined_questions_carry_gold_functions(tmp_path: Path) -> None:
    """A change to a method and to module-level code: the method is gold, the module
    code names nothing; with the option off, no gold functions."""
    r = GitRepo(tmp_path / "fn")
    base = (
        "import os\n\n\nclass Shop:\n    def price(self):\n        return 1\n\n\n"
        "def free():\n    return 0\n"
    )
    r.commit("Initial import of the shop", {"shop.py": base, "notes.py": "X = 1\n"})
    changed = base.replace("return 1", "return 2").replace("import os", "import sys")
    r.commit("Fix the price of the shop items", {"shop.py": changed, "notes.py": "X = 2\n"})
    (example,) = mine_examples(r.path).examples
    assert example.gold_files == ("notes.py", "shop.py")
    assert example.gold_functions == ("shop.py:Shop.price",)
    off = mine_examples(r.path, options=MineOptions(gold_functions=False)).examples
    assert off[0].gold_functions == ()


def test_a_range_git_would_read_as_an_option_is_refused(repo: GitRepo, tmp_path: Path) -> None:
    """``--range=--output=FILE`` reached ``git log`` as an option and wrote the file."""
    out = tmp_path / "written"
    with pytest.raises(DatasetError) as err:
        mine_examples(repo.path, f"--output={out}")
    assert str(err.value) == (
        f"cannot mine {repo.path}: --range '--output={out}' starts with '-'; "
        "give a revision range such as v1.0..HEAD"
    )
    assert not out.exists()

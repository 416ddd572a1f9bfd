"""One rule for every file a user names for ``rbench`` to write (docs/architecture.md#output-files):
``eval --out``, ``show --out``, ``fit-ltr --out``, ``prompts export --out`` and the ``OUT``
of ``dataset import-swebench`` and ``dataset mine``.

For each command: an existing file is refused without ``--force`` and left byte for byte;
``--force`` replaces it; an input of the command — the same path, a symlink or a hard link
to it — is refused even with ``--force`` and left intact; a missing parent folder is
refused and not created. Each refusal is one line on stderr, exit 2, nothing on stdout.
(Before, ``rbench eval preds.jsonl --out preds.jsonl`` replaced the predictions with
score rows and exit 0, and ``fit-ltr --out`` wrote over the run's own questions file.)
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import write_jsonl
from tests.integration.test_bad_input import _swe_row
from tests.unit.datasets.gitrepo import GitRepo, needs_git
from tests.unit.rank_fusion.test_ltr import _stored_run

PRECIOUS = b"precious: not to be lost\n"


@dataclass
class Case:
    """One command with an output file: how to call it, what it reads, what it writes."""

    argv: Callable[[str], list[str]]
    """The command line writing to the given output path (without ``--force``)."""
    check: Callable[[Path], None]
    """Asserts that a written output is the command's."""
    inputs: dict[Path, str] = field(default_factory=dict)
    """Each file the command reads → its role in the message."""
    flag: str = "--out"


def _eval(tmp: Path, home: Path) -> Case:
    rows = [{"id": "a", "prediction": "x", "reference": "x"},
            {"id": "b", "prediction": "y", "reference": "z"}]  # fmt: skip
    preds = write_jsonl(tmp / "preds.jsonl", list(rows))
    argv = ["--workspace", str(home), "eval", str(preds), "--metric", "exact_match"]
    assert main(argv) == EXIT_OK  # the results database exists: an input too

    def check(out: Path) -> None:
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in rows] == ["a", "b"]

    inputs = {preds: "the predictions file", home / "rbench.sqlite": "the results database"}
    return Case(lambda out: [*argv, "--out", out], check, inputs)


def _show(tmp: Path, home: Path) -> Case:
    preds = write_jsonl(tmp / "preds.jsonl", [{"id": "a", "prediction": "x", "reference": "x"}])
    ws = ["--workspace", str(home)]
    assert main([*ws, "eval", str(preds), "--metric", "exact_match", "--name", "stored"]) == 0
    run_id = next(p.name for p in (home / "results").iterdir())

    def check(out: Path) -> None:
        assert f"run {run_id}" in out.read_text()

    inputs = {home / "rbench.sqlite": "the results database"}
    return Case(lambda out: [*ws, "show", run_id, "--out", out], check, inputs)


def _fit_ltr(tmp: Path, home: Path) -> Case:
    run_dir = _stored_run(tmp, "r1")
    argv = ["--workspace", str(home), "fit-ltr", str(run_dir), "--sources", "good,noise",
            "--folds", "2"]  # fmt: skip

    def check(out: Path) -> None:
        assert set(json.loads(out.read_text())["sources"]) == {"good", "noise"}

    inputs = {
        tmp / "questions.jsonl": "run r1's questions file",
        run_dir / "queries.jsonl": "run r1's queries.jsonl",
        run_dir / "config.json": "run r1's config.json",
        run_dir / "runs" / "ds" / "good.trec": "run r1's TREC run runs/ds/good.trec",
    }
    return Case(lambda out: [*argv, "--out", out], check, inputs)


def _prompts_export(tmp: Path, home: Path) -> Case:
    ws = ["--workspace", str(home)]
    assert main([*ws, "prompts", "list"]) == EXIT_OK  # the workspace database exists

    def check(out: Path) -> None:
        assert json.loads(out.read_text())

    inputs = {home / "rbench.sqlite": "the workspace database, which holds the rows and prompts"}
    argv = [*ws, "prompts", "export", "code_questions", "rows", "--format", "json"]
    return Case(lambda out: [*argv, "--out", out], check, inputs)


def _import_swebench(tmp: Path, home: Path) -> Case:
    src = write_jsonl(tmp / "swe.jsonl", [_swe_row("ok-1")])

    def check(out: Path) -> None:
        assert json.loads(out.read_text())["id"] == "ok-1"

    argv = ["--workspace", str(home), "dataset", "import-swebench", str(src)]
    return Case(lambda out: [*argv, out], check, {src: "the SWE-bench file"}, flag="")


def _mine(tmp: Path, home: Path) -> Case:
    repo = GitRepo(tmp / "r")
    repo.commit("Initial import of the service", {"app.py": "def handler():\n    return 1\n"})
    repo.commit("Return two from the request handler", {"app.py": "def handler():\n    return 2\n"})

    def check(out: Path) -> None:
        assert json.loads(out.read_text())["gold_files"] == ["app.py"]

    argv = ["--workspace", str(home), "dataset", "mine", str(repo.path)]
    return Case(lambda out: [*argv, out], check, flag="")


CASES = [
    pytest.param(_eval, id="eval"),
    pytest.param(_show, id="show"),
    pytest.param(_fit_ltr, id="fit-ltr"),
    pytest.param(_prompts_export, id="prompts-export"),
    pytest.param(_import_swebench, id="import-swebench"),
    pytest.param(_mine, id="mine", marks=needs_git),
]


@pytest.fixture(params=CASES)
def case(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Case:
    made: Case = request.param(tmp_path, tmp_path / "ws")
    capsys.readouterr()  # the setup's own output
    gc.collect()  # the setup's database connections close (and checkpoint) now, not mid-test
    return made


def _name(case: Case, out: Path | str) -> str:
    return f"{case.flag} {out}" if case.flag else str(out)


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``argv``, expect exit 2 with one line on stderr and nothing on stdout; the line."""
    assert main(argv) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


def _no_temp_files(folder: Path) -> None:
    assert not list(folder.glob(".*.tmp"))


def test_an_existing_file_is_kept_without_force(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "taken.json"
    out.write_bytes(PRECIOUS)
    line = _refused(capsys, case.argv(str(out)))
    assert line == f"rbench: error: {_name(case, out)} exists; pass --force to replace it"
    assert out.read_bytes() == PRECIOUS
    _no_temp_files(tmp_path)


def test_force_replaces_an_existing_file_atomically(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "taken.json"
    out.write_bytes(PRECIOUS)
    out.chmod(0o640)
    assert main([*case.argv(str(out)), "--force"]) == EXIT_OK, capsys.readouterr().err
    case.check(out)
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file's mode, not a temp file's
    _no_temp_files(tmp_path)


def test_a_new_file_is_written_without_force(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new.json"
    assert main(case.argv(str(out))) == EXIT_OK, capsys.readouterr().err
    case.check(out)


def _links(tmp_path: Path, target: Path) -> Iterator[tuple[str, Path | str]]:
    """The input itself, another spelling of it, a symlink to it and a hard link to it."""
    yield "same path", target
    yield "other spelling", f"{target.parent}/../{target.parent.name}/./{target.name}"
    links = tmp_path / "links"
    links.mkdir(exist_ok=True)
    symlink = links / f"sym-{target.name}"
    symlink.symlink_to(target)
    yield "symlink", symlink
    hard = links / f"hard-{target.name}"
    os.link(target, hard)
    yield "hard link", hard


def test_an_input_is_refused_even_with_force(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not case.inputs:
        pytest.skip("the command reads a folder, never a file it could write over")
    for given, role in case.inputs.items():
        before = given.read_bytes()
        for how, out in _links(tmp_path, given):
            line = _refused(capsys, [*case.argv(str(out)), "--force"])
            assert line == (
                f"rbench: error: {_name(case, out)} is an input of this command ({role}); "
                "choose another file"
            ), how
            assert given.read_bytes() == before, how
            assert not Path(out).is_symlink() or Path(out).resolve() == given.resolve(), how
        for link in (tmp_path / "links").iterdir():
            link.unlink()


def test_a_missing_folder_is_refused_not_created(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-folder" / "deeper" / "out.json"
    line = _refused(capsys, [*case.argv(str(out)), "--force"])
    assert line == (
        f"rbench: error: {_name(case, out)}: folder {out.parent} does not exist; "
        "create it first or choose another file"
    )
    assert not (tmp_path / "no-such-folder").exists()


def test_a_folder_is_refused(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for given in (str(folder), f"{folder}/"):
        line = _refused(capsys, [*case.argv(given), "--force"])
        name = _name(case, given)
        assert line == f"rbench: error: {name} is a folder; name a file to write in it"
    assert list(folder.iterdir()) == []

"""``rbench fit-ltr`` on inputs it cannot use: one line on stderr, exit 2, no traceback
(issue 19 item 13): too few questions to cross-fit, an ``--out`` that is a folder
or under a file, an unknown run."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, main
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.ltr_fit import TrainingSet, fit_ltr, fold_of
from retrieval_bench.types import Run
from tests.unit.rank_fusion.test_ltr import FILES, _stored_run


def _same_fold_questions(folds: int) -> list[str]:
    """Two question ids that hash to the same fold (as two questions often do)."""
    first = "q0"
    second = next(
        f"q{i}" for i in range(1, 1000) if fold_of(f"q{i}", folds) == fold_of(first, folds)
    )
    return [first, second]


def test_questions_all_in_one_fold_are_a_config_error_not_a_key_error() -> None:
    data = TrainingSet(["bm25"])
    scores: dict[str, dict[str, float]] = {}
    for q, gold in zip(_same_fold_questions(5), FILES, strict=False):
        data.gold[q] = frozenset({gold})
        scores[q] = {f"file:{f}": float(5 - r) for r, f in enumerate(FILES)}
    data.runs = {"bm25": Run("bm25", scores)}
    with pytest.raises(ConfigError, match="at least 2 of the 5 folds.*all 2 question"):
        fit_ltr(data, folds=5)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


def test_out_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _stored_run(tmp_path, "r1")
    folder = tmp_path / "models"
    folder.mkdir()
    args = ["--workspace", str(tmp_path / "ws"), "fit-ltr", str(run_dir),
            "--sources", "good,noise", "--out", str(folder)]  # fmt: skip
    assert main(args) == EXIT_BAD_INPUT
    assert _one_error_line(capsys) == (
        f"rbench: error: --out {folder} is a folder; name a file to write in it"
    )
    assert list(folder.iterdir()) == []


def test_out_ending_in_a_slash_is_a_folder_not_a_file_of_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _stored_run(tmp_path, "r1")
    out = f"{tmp_path / 'models'}/"
    args = ["--workspace", str(tmp_path / "ws"), "fit-ltr", str(run_dir),
            "--sources", "good,noise", "--out", out, "--folds", "2"]  # fmt: skip
    assert main(args) == EXIT_BAD_INPUT
    assert _one_error_line(capsys) == (
        f"rbench: error: --out {out} is a folder; name a file to write in it"
    )
    assert not (tmp_path / "models").exists()


def test_out_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _stored_run(tmp_path, "r1")
    blocker = tmp_path / "taken"
    blocker.write_text("keep me")
    out = blocker / "m.json"
    args = ["--workspace", str(tmp_path / "ws"), "fit-ltr", str(run_dir),
            "--sources", "good,noise", "--out", str(out), "--folds", "2"]  # fmt: skip
    assert main(args) == EXIT_BAD_INPUT
    assert _one_error_line(capsys) == (
        f"rbench: error: --out {out}: {blocker} is a file, not a folder; choose another file"
    )
    assert blocker.read_text() == "keep me"


def test_unknown_run_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    args = ["--workspace", str(ws), "fit-ltr", "nope", "--sources", "bm25", "--out", "m.json"]
    assert main(args) == EXIT_BAD_INPUT
    line = _one_error_line(capsys)
    assert line.startswith("rbench: error: fit-ltr: nope: no stored run folder")

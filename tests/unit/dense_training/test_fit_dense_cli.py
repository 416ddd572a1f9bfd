"""``rbench fit-dense``'s refusals, each one line and exit 2 before any work
(docs/stages.md#fit-dense): a SWE-bench repository, a repository that does not
exist, an ``--out`` that exists or has no parent folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from retrieval_bench.cli import main
from retrieval_bench.cli.fit_dense import repo_name


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("name", ["pytest", "flask", "requests", "django", "scikit-learn"])
def test_a_swebench_repository_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    repo = tmp_path / f"{name}.bundle"
    repo.write_bytes(b"")
    code, err = _run(capsys, "--workspace", str(tmp_path / "ws"), "fit-dense", str(repo),
                     "--out", str(tmp_path / "model"))  # fmt: skip
    assert code == 2
    assert f"{name} is a SWE-bench repository" in err and "\n" not in err
    assert not (tmp_path / "model").exists()


def _missing_parent(t: Path) -> list[str]:
    return ["--out", str(t / "missing" / "model")]


def _existing(t: Path) -> list[str]:
    (t / "exists").mkdir()
    return ["--out", str(t / "exists")]


def _a_file(t: Path) -> list[str]:
    (t / "f").write_text("")
    return ["--out", str(t / "f"), "--force"]


@pytest.mark.parametrize(
    ("make", "error"),
    [(_missing_parent, "does not exist"), (_existing, "exists; choose"), (_a_file, "is a file")],
)
def test_an_out_folder_it_may_not_write_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], list[str]],
    error: str,
) -> None:
    repo = tmp_path / "attrs.bundle"
    repo.write_bytes(b"")
    out = make(tmp_path)
    code, err = _run(capsys, "--workspace", str(tmp_path / "ws"), "fit-dense", str(repo), *out)
    assert code == 2 and error in err


def test_a_missing_repository_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, "--workspace", str(tmp_path / "ws"), "fit-dense",
                     str(tmp_path / "nowhere.bundle"), "--out", str(tmp_path / "m"))  # fmt: skip
    assert code == 2 and "repository nowhere at" in err and "does not exist" in err


def test_repository_names() -> None:
    assert repo_name("/data/attrs.bundle") == ("attrs", "/data/attrs.bundle")
    assert repo_name("/src/click/") == ("click", "/src/click/")
    assert repo_name("mylib=/src/x.git") == ("mylib", "/src/x.git")
    assert repo_name("/a=b/c.git") == ("c", "/a=b/c.git")

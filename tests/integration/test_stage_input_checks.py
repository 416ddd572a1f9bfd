"""``rbench run`` with a bad ``ltr`` model file or a ``hierarchical`` fusion in the
wrong roles: one line, exit 2, before any snapshot is opened or run recorded
(docs/stages.md#learning-to-rank, docs/stages.md#hierarchical). Before these
checks, each ended ``done`` with the stage failed on every question, or with a
traceback, or aborted the process inside LightGBM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, main
from retrieval_bench.rank_fusion.ltr_fit import model_text
from tests.integration.conftest import FIXTURES, REPO_ROOT
from tests.unit.rank_fusion.ltr_models import lambdarank_model, logistic_model
from tests.unit.rank_fusion.test_ltr_model_file import _no_leaf_value

pytestmark = pytest.mark.integration

SHOP = FIXTURES / "shopapi"


def _config(tmp_path: Path, fusions: list[dict[str, Any]]) -> Path:
    cfg = {
        "name": "checks",
        "datasets": [
            {"name": "shopapi", "questions": str(SHOP / "questions.jsonl"), "snapshot": str(SHOP)}
        ],
        "retrievers": [{"name": "bm25"}, {"name": "bm25-files", "id": "files"}],
        "fusions": fusions,
        "table_k": 5,
    }
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _stopped(workspace: Path, capsys: pytest.CaptureFixture[str], cfg: Path) -> str:
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not (workspace / "rbench.sqlite").exists()  # no run recorded
    assert not (workspace / "cache").exists() and not (workspace / "results").exists()
    return err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "model.json not found (write one with rbench fit-ltr)"),
        (
            b"\x00\x01\xfe\xff binary",
            "model.json is not UTF-8 text (not a model file written by rbench fit-ltr)",
        ),
        (b"not json", "model.json is not JSON (Expecting value: line 1 column 1 (char 0))"),
    ],
)
def test_an_unreadable_model_file(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    content: bytes | None, message: str,
) -> None:  # fmt: skip
    if content is not None:
        (tmp_path / "model.json").write_bytes(content)
    cfg = _config(tmp_path, [{"name": "ltr", "model_file": "model.json"}])
    err = _stopped(workspace, capsys, cfg)
    assert err.startswith(f"rbench: error: fusions.0 (ltr): ltr: model file {tmp_path}/"), err
    assert err.endswith(message), err


def test_a_model_fitted_on_other_stages(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model.json").write_text(model_text(logistic_model(("bm25", "dense"))))
    cfg = _config(tmp_path, [{"name": "ltr", "model_file": "model.json"}])
    err = _stopped(workspace, capsys, cfg)
    assert err == (
        f"rbench: error: fusions.0 (ltr): ltr: model file {tmp_path / 'model.json'} was "
        "fitted on stages ['bm25', 'dense'], but ['dense'] is not among this stage's "
        "inputs ['bm25', 'files'] (add them, with the parameters they had, or re-fit)"
    )


def test_a_tree_without_leaf_value_does_not_abort_the_process(tmp_path: Path) -> None:
    """In a child process: LightGBM reading this text ends the process (exit 134)."""
    model = lambdarank_model().to_dict()
    model["full"]["booster"] = _no_leaf_value(model["full"]["booster"], 0)
    (tmp_path / "model.json").write_text(json.dumps(model))
    cfg = _config(tmp_path, [{"name": "ltr", "model_file": "model.json"}])
    env = {**os.environ, "RBENCH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO_ROOT)}
    code = "import sys; from retrieval_bench.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "run", str(cfg)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == EXIT_BAD_INPUT, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"rbench: error: fusions.0 (ltr): ltr: model file {tmp_path / 'model.json'} is "
        "malformed: full: booster: Tree=0: no leaf_value"
    ]
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("inputs", "per_file", "message"),
    [
        (["files"], None, "inputs must be two stages, [files, chunks]"),
        (["bm25", "files"], None, "inputs ['bm25', 'files'] are the wrong way round"),
        (["files", "bm25"], -1, "per_file must be an integer >= 1, not -1"),
    ],
)
def test_hierarchical_in_the_wrong_roles(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    inputs: list[str], per_file: int | None, message: str,
) -> None:  # fmt: skip
    fusion = {"name": "hierarchical", "id": "fn", "inputs": inputs, "per_file": per_file}
    err = _stopped(workspace, capsys, _config(tmp_path, [fusion]))
    # a bad value is refused by the stage's Params (naming the key), a role by check_config
    where = "fusions.0.per_file: " if per_file is not None else "fusions.0 (fn): hierarchical: "
    assert err.startswith(f"rbench: error: {where}") and message in err, err

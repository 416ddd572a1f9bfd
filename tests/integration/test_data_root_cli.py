"""The bundled configs from a clone with no ``../shared`` beside it (issue 19 item 17):
``rbench run`` and ``rbench sweep`` say where the data comes from and how to point at
it (``$RBENCH_DATA_ROOT`` or ``--data-root``), and run from a data root given so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_bench.data_root import DATA_ROOT_ENV, HOW
from tests.integration.conftest import FIXTURES, REPO_ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ROOT_ENV, raising=False)


@pytest.mark.parametrize(
    ("command", "config", "data"),
    [
        ("run", "swebench-lite-dev.yaml", "swebench-lite-dev/swebench-lite-dev.jsonl"),
        ("run", "pytest-history.yaml", "devsets/pytest-7.4.0.jsonl"),
        ("sweep", "sweep-swebench-lite-dev.yaml", "swebench-lite-dev/swebench-lite-dev.jsonl"),
    ],
)
def test_a_clone_without_shared_data_says_how_to_point_at_it(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    command: str, config: str, data: str,
) -> None:  # fmt: skip
    clone = tmp_path / "clone"  # no shared/ beside it: ../../../shared is tmp_path/shared
    (clone / "benchmarks").mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "benchmarks" / "configs", clone / "benchmarks" / "configs")
    path = clone / "benchmarks" / "configs" / config
    root = tmp_path / "shared" / "data"
    assert main([command, str(path)]) == EXIT_BAD_INPUT
    name = yaml.safe_load(path.read_text())["datasets"][0]["name"]
    assert capsys.readouterr().err == (
        f"rbench: error: {path}: dataset {name}: {root / data} is missing: the data root "
        f"{root} (the config's default ../../../shared/data) does not exist; {HOW}\n"
    )


def test_run_and_sweep_read_a_data_root_given_by_option(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "my-data"
    (root / "devsets").mkdir(parents=True)
    shutil.copy(FIXTURES / "shopapi" / "questions.jsonl", root / "devsets" / "shop.jsonl")
    cfg = {
        "name": "from-data-root",
        "datasets": [{"name": "shopapi", "questions": "${RBENCH_DATA_ROOT}/devsets/shop.jsonl",
                      "snapshot": str(FIXTURES / "shopapi"), "hash_split": 0.5}],
        "retrievers": [{"name": "bm25"}],
    }  # fmt: skip
    path = tmp_path / "configs" / "c.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["run", str(path), "--data-root", str(root), "--limit", "2", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["counts"]["all"] == 2

    path.write_text(yaml.safe_dump({**cfg, "sweep": {"grid": {"candidates": [10, 20]}}}))
    args = ["sweep", str(path), "--data-root", str(root), "--limit", "2", "--json"]
    assert main(args) == EXIT_OK
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 2

    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(path)]) == EXIT_BAD_INPUT
    assert "which is not set: set RBENCH_DATA_ROOT or pass --data-root DIR" in (
        capsys.readouterr().err
    )

"""The bundled per-question-snapshot benchmarks, sliced: swebench-lite-dev (a tarball
per question) and pytest-history (each question at its commit's parent, from the
shared git bundle) through ``rbench run`` (docs/datasets.md#per-question-snapshots)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from retrieval_bench.cli import EXIT_OK, main
from tests.integration.conftest import REPO_ROOT

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "config",
    [
        pytest.param("swebench-lite-dev", marks=pytest.mark.needs_data_root(
            "swebench-lite-dev/swebench-lite-dev.jsonl")),
        pytest.param("pytest-history", marks=pytest.mark.needs_data_root(
            "devsets/pytest-7.4.0.jsonl", "repos/pytest.bundle")),
    ],
)  # fmt: skip
def test_bundled_config_slice(
    config: str, tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = REPO_ROOT / "benchmarks" / "configs" / f"{config}.yaml"
    data = yaml.safe_load(src.read_text())
    data["retrievers"] = [{"name": "bm25"}]
    data["fusions"] = []
    cfg = src.parent / f".test-{config}-{tmp_path.name}.yaml"  # same folder: same relative paths
    cfg.write_text(yaml.safe_dump(data))
    try:
        code = main(["run", str(cfg), "--json", "--limit", "5"])
    finally:
        cfg.unlink()
    out = capsys.readouterr()
    assert code == EXIT_OK, out.err
    result = json.loads(out.out)
    assert result["counts"]["all"] == 5
    row = result["tables"]["all"]["bm25"]
    assert 0.0 <= row["Acc@5"] <= row["Acc@10"] <= 1.0 and row["MRR"] > 0
    run_dir = workspace / "results" / result["run_id"]
    prov = json.loads((run_dir / "config.json").read_text())["provenance"]
    groups = prov["datasets"][data["datasets"][0]["name"]]["snapshot_groups"]
    assert sum(len(g["query_ids"]) for g in groups) == 5
    assert all(g["fingerprint"] for g in groups)

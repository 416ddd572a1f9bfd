"""Golden end-to-end test (pyserini style): the fixture benchmark's per-stage
scores, asserted to 4 places.

It runs the shipped ``benchmarks/configs/fixtures.yaml`` exactly as
``make demo`` does — real tree-sitter chunks, real MiniLM embeddings in a real
LanceDB index, real bm25s, real ripgrep — and compares every stage's mean
file-level metrics with ``golden_fixtures.json``. A change that moves any of
them must update that file on purpose (regenerate with
``python tests/integration/test_golden_fixtures.py``) and say why.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden_fixtures.json")
METRICS = (
    "P@5",
    "R@5",
    "F1@5",
    "Acc@5",
    "MRR",
    "nDCG@5",
    "F1@8k",
    "P@1",
    "R@10",
    "lost",
    "line_F1@5",
    "chunk_MRR",
)


def _run(home: Path) -> Any:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.workspace import Workspace

    # relative paths in the config resolve against its own folder, wherever we run from
    cfg = load_config(REPO_ROOT / "benchmarks" / "configs" / "fixtures.yaml")
    return run_benchmark(cfg, Workspace(home))


def _summary(result: Any) -> dict[str, dict[str, float]]:
    table = result.tables["all"]
    return {s: {m: round(table[s][m], 6) for m in METRICS} for s in result.stage_order}


@pytest.mark.integration
def test_fixture_benchmark_matches_golden_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
    result = _run(tmp_path / "home")
    expected = json.loads(GOLDEN.read_text())
    assert result.counts["all"] == expected["queries"]
    got = _summary(result)
    assert list(got) == list(expected["stages"])
    for stage, metrics in expected["stages"].items():
        for metric, value in metrics.items():
            assert got[stage][metric] == pytest.approx(value, abs=5e-5), (stage, metric)
    # the stored run is complete: one TREC file per dataset and stage, provenance recorded
    assert result.out_dir is not None
    trec = sorted(p.relative_to(result.out_dir).as_posix() for p in result.out_dir.rglob("*.trec"))
    assert len(trec) == 3 * len(expected["stages"])
    drill = [json.loads(line) for line in (result.out_dir / "queries.jsonl").open()]
    assert len(drill) == expected["queries"]
    for rec in drill:
        assert list(rec["stages"]) == list(expected["stages"])
        for stage in rec["stages"].values():
            assert len(stage["files"]) <= 5 and set(stage["lost"]) <= set(rec["gold_files"])
            # a lost file is never among the top files the same stage shows (and R@5 counts)
            assert not set(stage["lost"]) & set(stage["files"]), rec["query_id"]
    # the mean "lost" of a stage is the mean length of its per-query lost lists
    for stage in expected["stages"]:
        mean_lost = sum(len(r["stages"][stage]["lost"]) for r in drill) / len(drill)
        assert mean_lost == pytest.approx(got[stage]["lost"], abs=1e-6)
    prov = json.loads((result.out_dir / "config.json").read_text())["provenance"]
    assert prov["models"]["embedding"] == "all-MiniLM-L6-v2"
    assert prov["packages"]["lancedb"] == "0.40.0"
    assert set(prov["datasets"]) == {"shopapi", "webapp", "logtool"}
    # the compiled plan is stored beside the config: every stage, as it was built
    plan = json.loads((result.out_dir / "plan.json").read_text())
    assert [s["label"] for s in plan["stages"]] == list(expected["stages"])
    assert all(isinstance(s["params"], dict) for s in plan["stages"])


if __name__ == "__main__":  # regenerate the golden file
    import tempfile

    os.environ.setdefault("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
    with tempfile.TemporaryDirectory() as tmp:
        res = _run(Path(tmp))
        data = {"queries": res.counts["all"], "stages": _summary(res)}
    GOLDEN.write_text(json.dumps(data, indent=2) + "\n")
    json.dump(data, sys.stdout, indent=2)

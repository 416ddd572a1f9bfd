"""``rbench compare`` on real runs of the shopapi fixture: table, stage pairs, JSON, gate.

Three stored runs: bm25 (+rrf over it), bm25 + dense (+rrf) and a deliberately
crippled bm25 that returns a single chunk per query (``candidates: 1``), whose
R@5 drops from 0.894 to 0.556 on the 33 questions (every paired test p < 0.001).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_FAILED, EXIT_OK, main
from retrieval_bench.store.db import ResultsDB
from tests.integration.conftest import FIXTURES, write_config

pytestmark = pytest.mark.integration

SHOPAPI: list[dict[str, object]] = [
    {
        "name": "shopapi",
        "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
        "snapshot": str(FIXTURES / "shopapi"),
    }
]


def run_benchmark(
    path: Path, retrievers: list[str], capsys: pytest.CaptureFixture[str], **extra: object
) -> str:
    cfg = write_config(path, SHOPAPI, retrievers)
    if extra:
        cfg.write_text(json.dumps({**json.loads(cfg.read_text()), **extra}))
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    run_id: str = json.loads(capsys.readouterr().out)["run_id"]
    return run_id


def test_compare_runs_stages_json_and_gate(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r1 = run_benchmark(tmp_path / "bm25.yaml", ["bm25"], capsys)
    r2 = run_benchmark(tmp_path / "hybrid.yaml", ["bm25", "dense"], capsys)
    bad = run_benchmark(tmp_path / "bad.yaml", ["bm25"], capsys, candidates=1)

    # run vs run: every shared stage (bm25, rrf), one table per metric
    assert main(["compare", r1, r2]) == EXIT_OK
    out = capsys.readouterr().out
    print(out, file=sys.stderr)  # shown with -s or on failure
    assert "test: randomisation (10000 resamples, seed 0), alpha 0.05" in out
    for metric in ("R@5", "nDCG@5", "MRR", "F1@5", "P@5", "Acc@5"):
        assert f"\n{metric} (higher is better)\n" in out
    bm25_rows = [x.split() for x in out.splitlines() if x.startswith(f"{r2}  bm25 ")]
    assert len(bm25_rows) == 6  # the same bm25 in both runs: no difference, p = 1
    assert all(r[4] == "+0.000" and r[7] == r[8] == "1.0000" for r in bm25_rows)

    # one stage against another stage, with another test
    assert main(["compare", f"{r1}:bm25", f"{r2}:rrf", "--test", "wilcoxon"]) == EXIT_OK
    out = capsys.readouterr().out
    print(out, file=sys.stderr)  # shown with -s or on failure
    assert "test: wilcoxon, alpha 0.05" in out and "bm25→rrf" in out

    assert main(["compare", r1, r2, "--json", "--resamples", "2000"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"] == ["R@5", "nDCG@5", "MRR", "F1@5", "P@5", "Acc@5"]
    assert {(r["stage"], r["n_pairs"], r["n_unpaired"]) for r in data["rows"]} == {
        ("bm25", 33, 0),
        ("rrf", 33, 0),
    }
    assert all(
        set(r["p_values"]) == {"randomisation", "t", "wilcoxon", "bootstrap"} for r in data["rows"]
    )
    with ResultsDB(workspace / "rbench.sqlite") as db:  # per-query means = the stored table
        table = db.stage_table(r2)
    for r in data["rows"]:
        assert r["candidate_mean"] == pytest.approx(table[r["stage"]][r["metric"]], abs=1e-12)

    # the gate: a run against itself passes; the crippled run fails on R@5
    assert main(["compare", r1, r1, "--gate", r1, "--resamples", "2000"]) == EXIT_OK
    assert "gate: pass" in capsys.readouterr().out
    assert main(["compare", r1, bad, "--gate", r1]) == EXIT_FAILED
    out = capsys.readouterr().out
    print(out, file=sys.stderr)  # shown with -s or on failure
    fails = [x for x in out.splitlines() if x.startswith("gate: FAIL")]
    assert {x.split()[5] for x in fails} == {"bm25", "rrf"}
    assert all(x.split()[7] == "R@5" and float(x.split()[9]) < -0.3 for x in fails)

"""What sharing saves in a sweep: a 12-cell sweep against the same 12 cells as
separate runs, in one command (docs/sweeps.md#shared-work).

The grid: 3 chunkings (``ast`` at budgets 256, 512, 1024) × 4 fusion settings
(``rrf`` at ``k_rrf`` 5, 20, 60, 120), bm25 + exact, on the pytest devset's dev
split over the pytest 7.4.0 sdist (fetched once before any clock starts, then
read as a folder). Every scenario starts from an empty cache (its own
``RBENCH_CACHE``), in this process, one after the other:

* ``sweep``: ``run_sweep`` of the 12 cells on dev (select) plus the report phase
  (the chosen cell and the base config on test);
* ``sweep_rerun``: the same sweep again on the now warm disk caches (process memos
  emptied, as in a new process);
* ``separate``: the 12 cells as 12 ``run_benchmark`` calls on dev, each from an
  empty cache (what a user without sweeps pays: every run re-chunks);
* ``single``: the most expensive of those 12 runs alone (the unit the sweep is
  judged against: the issue's target is sweep ≤ 1.5 × it).

Reported: the seconds of each, the ratios sweep / single and sweep / separate,
the work the sweep ran and reused, and the rerun's files chunked (must be 0).

Usage::

    python benchmarks/perf/sweep_sharing.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_common import DEVSETS, write_result  # sibling module: the scripts run standalone

RESULTS = Path(__file__).resolve().parent / "results" / "sweep_sharing.json"
GRID = {"chunker.budget": [256, 512, 1024], "fusions.rrf.k_rrf": [5, 20, 60, 120]}


def _base(snapshot: Path) -> dict[str, Any]:
    return {
        "name": "pytest-sweep-sharing",
        "datasets": [
            {
                "name": "pytest",
                "questions": str(DEVSETS / "pytest-7.4.0.jsonl"),
                "snapshot": str(snapshot),
            }
        ],  # fmt: skip
        "chunker": {"name": "ast", "budget": 512},
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf", "k_rrf": 60}],
        "candidates": 50,
    }


def _forget_process_memos() -> None:
    """Empty what a process remembers between runs (ripgrep output, bm25 tokens, file
    reads, chunk-cache rows), so each scenario pays what a fresh ``rbench`` process
    would: only the on-disk caches carry over (and only where a scenario shares them)."""
    from retrieval_bench import files
    from retrieval_bench.chunking import cache
    from retrieval_bench.retrieval import token_memo
    from retrieval_bench.retrieval.rg_memo import RG_MEMO

    RG_MEMO.clear()
    for memo in (token_memo._MEMOS, files._VERDICTS, files._READ, cache._MEMO):
        memo.clear()


def _fresh(tmp: Path, name: str) -> Any:
    from retrieval_bench.workspace import Workspace

    _forget_process_memos()
    root = tmp / name
    os.environ["RBENCH_CACHE"] = str(root / "cache")
    return Workspace(root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    from retrieval_bench.config import parse_config
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.snapshot import open_snapshot
    from retrieval_bench.sweep.grid import expand
    from retrieval_bench.sweep.runner import run_sweep
    from retrieval_bench.sweep.spec import parse_sweep, with_objective

    with tempfile.TemporaryDirectory(prefix="rbench-sweep-sharing-") as name:
        tmp = Path(name)
        snapshot = open_snapshot("pytest==7.4.0", tmp / "sdist").root
        base = parse_config(_base(snapshot), "sweep_sharing")
        spec = parse_sweep({"grid": GRID, "objective": "Acc@5"})
        base = with_objective(base, spec.objective)
        cells = expand(base, spec)
        assert len(cells) == 12

        out: dict[str, Any] = {"cells": len(cells), "grid": GRID}
        ws = _fresh(tmp, "sweep")  # the rerun uses the same, now warm, workspace
        for scenario in ("sweep", "sweep_rerun"):
            _forget_process_memos()  # the rerun: a new process on the warm disk caches
            print(f"[{scenario}] ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            result = run_sweep(base, spec, cells, ws)
            out[scenario] = {
                "seconds": time.perf_counter() - t0,
                "work": result.counts.as_dict(),
                "chosen": result.chosen.cell.label if result.chosen else None,
            }
            print(f"[{scenario}] {out[scenario]['seconds']:.1f}s", file=sys.stderr, flush=True)
        separate: list[dict[str, Any]] = []
        for cell in cells:
            cfg = cell.config.model_copy(deep=True)
            for ds in cfg.datasets:
                ds.split = "dev"
            ws_cell = _fresh(tmp, f"cell-{cell.index}")
            t0 = time.perf_counter()
            res = run_benchmark(cfg, ws_cell)
            seconds = time.perf_counter() - t0
            separate.append({"cell": cell.label, "seconds": seconds,
                             "acc5": res.tables["all"]["rrf"]["Acc@5"]})  # fmt: skip
            print(f"[separate] {cell.label}: {seconds:.1f}s", file=sys.stderr, flush=True)
        single = max(separate, key=lambda r: r["seconds"])
        total_separate = sum(r["seconds"] for r in separate)
        out["separate"] = {"seconds": total_separate, "runs": separate}
        out["single"] = single
        out["ratio_sweep_to_single"] = out["sweep"]["seconds"] / single["seconds"]
        out["ratio_sweep_to_separate"] = out["sweep"]["seconds"] / total_separate
        out["ratio_rerun_to_single"] = out["sweep_rerun"]["seconds"] / single["seconds"]
    write_result(args.out, out)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

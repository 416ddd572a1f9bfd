"""Serial vs ``--jobs 2`` vs Ray on N pytest-history snapshots
(docs/architecture.md#executors).

The first N distinct commits of the pytest devset (one question each, so N
snapshot groups) with the bundled ``benchmarks/configs/pytest-history.yaml``
(bm25 + exact + rrf), run three times with ``rbench run --json``, each in its
own process with a fresh, empty workspace and cache (so each does the same
cold work: extract, chunk, index, search):

* ``serial``: the default executor (this process);
* ``processes``: ``--jobs J`` (a local pool of J spawned processes);
* ``ray``: ``--executor ray --jobs J`` (a local Ray cluster started for the run).

Reported: the wall time of each command, the speedup of each against serial
(same command, same machine, measured one after the other), Ray's start-up
(``ray.init`` of a local cluster, from the run's provenance), and whether the
three wrote byte-identical TREC files (they must).

Usage::

    python benchmarks/perf/executors.py [--snapshots 20] [--jobs 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from perf_common import DEVSETS, write_result  # sibling module: the scripts run standalone

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "configs" / "pytest-history.yaml"
QUESTIONS = DEVSETS / "pytest-7.4.0.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "executors.json"


def _questions(n: int) -> list[dict[str, Any]]:
    """The first ``n`` rows with distinct commits (so ``n`` distinct snapshots)."""
    rows, seen = [], set()
    for line in QUESTIONS.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["commit"] not in seen:
            seen.add(row["commit"])
            rows.append(row)
        if len(rows) == n:
            break
    return rows


def _config(tmp: Path, rows: list[dict[str, Any]]) -> Path:
    """The bundled config over ``rows``, every path absolute."""
    data = yaml.safe_load(CONFIG.read_text())
    questions = tmp / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data["datasets"][0]["questions"] = str(questions)
    data["datasets"][0].pop("limit", None)
    data["repos"] = {k: str((CONFIG.parent / v).resolve()) for k, v in data["repos"].items()}
    path = tmp / "config.json"
    path.write_text(json.dumps(data))
    return path


def _run(name: str, config: Path, tmp: Path, extra: list[str]) -> dict[str, Any]:
    ws = tmp / name
    env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache")}
    cmd = [sys.executable, "-m", "retrieval_bench.cli", "--workspace", str(ws), "run",
           str(config), "--json", *extra]  # fmt: skip
    print(f"[{name}] {' '.join(extra) or '(serial)'} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"[{name}] failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    run_dir = ws / "results" / out["run_id"]
    prov = json.loads((run_dir / "config.json").read_text())["provenance"]
    trec = {p.name: p.read_text() for p in sorted((run_dir / "runs").rglob("*.trec"))}
    groups = next(iter(prov["datasets"].values())).get("snapshot_groups", [])
    print(f"[{name}] {wall:.1f}s", file=sys.stderr, flush=True)
    return {
        "wall_s": wall,
        "executor": prov.get("executor", {}),
        "groups": len(groups),
        "workers": sorted({g.get("worker", "") for g in groups}),
        "trec": trec,
        "acc5": {s: row["Acc@5"] for s, row in out["tables"]["all"].items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    rows = _questions(args.snapshots)
    jobs = str(args.jobs)
    with tempfile.TemporaryDirectory(prefix="rbench-executors-") as tmp_name:
        tmp = Path(tmp_name)
        config = _config(tmp, rows)
        runs = {
            "serial": _run("serial", config, tmp, []),
            "processes": _run("processes", config, tmp, ["--jobs", jobs]),
            "ray": _run("ray", config, tmp, ["--executor", "ray", "--jobs", jobs]),
        }
    base = runs["serial"]
    result = {
        "snapshots": args.snapshots,
        "jobs": args.jobs,
        "identical_trec": all(r["trec"] == base["trec"] for r in runs.values()),
        "runs": {
            name: {
                "wall_s": round(r["wall_s"], 2),
                "speedup_vs_serial": round(base["wall_s"] / r["wall_s"], 2),
                "startup_s": round(float(r["executor"].get("startup_s", 0.0)), 2),
                "workers": r["executor"].get("workers"),
                "distinct_worker_processes": len(r["workers"]),
                "groups": r["groups"],
                "acc5": r["acc5"],
            }
            for name, r in runs.items()
        },
    }
    write_result(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

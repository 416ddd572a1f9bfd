"""Many snapshots of one repository: N pytest-history snapshots against one cold one
(docs/datasets.md#per-question-snapshots, docs/architecture.md#caches).

The pytest devset asks each question at its commit's parent. This takes the
first N distinct commits of it (one question each, so N snapshot groups) with
the bundled ``benchmarks/configs/pytest-history.yaml`` (bm25 + exact + rrf;
``--dense`` adds the dense retriever) and measures, in one command, each in a
fresh process with a fresh workspace (``RBENCH_HOME`` and ``RBENCH_CACHE`` in a
temp folder; imports and the chunker's tokenizer warmed before the clock starts):

(a) ``one_cold``: one snapshot (the first question), caches empty — the unit,
    measured just before and just after (b) (the mean: a shared machine's load drifts);
(b) ``shared``: all N snapshots with the shared caches (empty at the start);
(c) ``naive``: all N snapshots rebuilt from scratch each time:
    ``RBENCH_CHUNK_CACHE=0`` (no chunk cache, no bm25 token memo) and
    ``RBENCH_TREE_LINKS=0`` (every tree a full ``git archive`` extraction).

Reported: total(b) / (a) and total(c) / (a) (target for (b): at most 5 with
N = 50); files chunked per extra snapshot (2..N) as a share of that snapshot's
files (target: at most 2%), beside the floor for content-keyed reuse (files
whose bytes no earlier snapshot of the run had); the disk of the caches after
(b) beyond (a), per extra snapshot, by folder; a per-phase breakdown (snapshot
open/extract, walk + chunk, each stage, the rest); and whether (b) and (c)
wrote identical TREC runs and per-query metrics (reuse must not change a
result), and (a)'s question the same lines as in (b).

Usage::

    python benchmarks/perf/many_snapshots.py [--snapshots 50] [--dense] [--out PATH]

writes ``benchmarks/perf/results/many_snapshots.json`` and ``.md`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_common import DEVSETS, write_result  # sibling module: the scripts run standalone

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "configs" / "pytest-history.yaml"
QUESTIONS = DEVSETS / "pytest-7.4.0.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "many_snapshots.json"
NAIVE_ENV = {"RBENCH_CHUNK_CACHE": "0", "RBENCH_TREE_LINKS": "0"}
# cache folders in the order they are counted (a hardlinked file counts once, where first seen)
CACHE_PARTS = (
    "cache/snapshots/mirrors",
    "cache/snapshots/repo-blobs",
    "cache/snapshots/repo-trees",
    "cache/chunks",
    "cache/embeddings",
    "indexes",
)


# ----------------------------------------------------------------------------- child


def _child(spec: dict[str, Any]) -> None:
    """One scenario in this (fresh) process; writes its measurements to spec['result']."""
    import yaml

    from retrieval_bench.config import parse_config
    from retrieval_bench.harness.runner import run_benchmark
    from retrieval_bench.harness.validate import validate_stages
    from retrieval_bench.workspace import Workspace

    data = yaml.safe_load(Path(spec["config"]).read_text())
    data["datasets"][0]["questions"] = spec["questions"]
    if spec["dense"]:
        data["retrievers"].append({"name": "dense"})
    cfg = parse_config(data, spec["config"], Path(spec["config"]).parent)
    validate_stages(cfg)  # warm-up: stage modules imported, the chunker's tokenizer loaded
    t0 = time.perf_counter()
    result = run_benchmark(cfg, Workspace(Path(spec["workspace"])))
    total = time.perf_counter() - t0
    assert result.out_dir is not None
    prov = json.loads((result.out_dir / "config.json").read_text())["provenance"]
    dataset = prov["datasets"][cfg.datasets[0].name]
    out = {
        "total_s": total,
        "out_dir": str(result.out_dir),
        "groups": dataset.get("snapshot_groups", []),
        "failures": dataset.get("snapshot_failures", []),
        "stage_seconds": {s: row["seconds"] for s, row in result.tables["all"].items()},
        "table": {
            s: {k: row[k] for k in ("Acc@5", "MRR", "R@10")}
            for s, row in result.tables["all"].items()
        },
    }
    Path(spec["result"]).write_text(json.dumps(out))


# ----------------------------------------------------------------------------- parent


def _questions(n: int, path: Path) -> list[dict[str, Any]]:
    """The first ``n`` rows with distinct commits (so ``n`` distinct snapshots)."""
    rows, seen = [], set()
    for line in path.read_text().splitlines():
        row = json.loads(line) if line.strip() else {}
        if row.get("commit") and row["commit"] not in seen:
            seen.add(row["commit"])
            rows.append(row)
        if len(rows) == n:
            break
    return rows


def _scenario(
    name: str, rows: list[dict[str, Any]], tmp: Path, dense: bool, env: dict[str, str]
) -> dict[str, Any]:
    folder = tmp / name
    folder.mkdir()
    questions = folder / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = folder / "ws"
    spec = {
        "config": str(CONFIG),
        "questions": str(questions),
        "dense": dense,
        "workspace": str(ws),
        "result": str(folder / "result.json"),
    }
    child_env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache"), **env}
    for key in ("RBENCH_CHUNK_CACHE", "RBENCH_TREE_LINKS"):
        if key not in env:
            child_env.pop(key, None)
    print(f"[{name}] {len(rows)} snapshot(s) ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    subprocess.run(cmd, env=child_env, check=True, cwd=ROOT)
    out: dict[str, Any] = json.loads((folder / "result.json").read_text())
    out["workspace"] = str(ws)
    out["disk"] = _disk(ws)
    print(f"[{name}] {out['total_s']:.1f}s", file=sys.stderr, flush=True)
    return out


def _disk(ws: Path) -> dict[str, int]:
    """Bytes allocated per cache folder, every inode counted once (where first seen)."""
    seen: set[tuple[int, int]] = set()
    out: dict[str, int] = {}
    for part in CACHE_PARTS:
        total = 0
        for dirpath, dirnames, filenames in os.walk(ws / part):
            for name in [*dirnames, *filenames]:
                st = os.lstat(os.path.join(dirpath, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
        out[part] = total
    out["total"] = sum(out.values())
    return out


def _phases(run: dict[str, Any]) -> dict[str, Any]:
    """Seconds per phase: the first snapshot, and the mean over the extra ones."""
    groups = run["groups"]

    def split(g: dict[str, Any]) -> dict[str, float]:
        t = g.get("timings", {})
        open_s, chunk_s = t.get("snapshot", 0.0), t.get("chunk_index", 0.0)
        return {
            "open_extract": open_s,
            "walk_chunk": chunk_s,
            "stages_and_scoring": g.get("seconds", 0.0) - open_s - chunk_s,
        }

    parts = [split(g) for g in groups]
    extra = parts[1:]
    mean_extra = {k: statistics.fmean(p[k] for p in extra) for k in parts[0]} if extra else {}
    in_groups = sum(g.get("seconds", 0.0) for g in groups)
    n = max(len(groups), 1)
    return {
        "first_snapshot": parts[0] if parts else {},
        "mean_extra_snapshot": mean_extra,
        "stage_seconds_per_snapshot": {s: v / n for s, v in run["stage_seconds"].items()},
        "outside_groups_s": run["total_s"] - in_groups,
    }


def _in_groups(run: dict[str, Any]) -> float:
    return float(sum(g.get("seconds", 0.0) for g in run["groups"]))


def _rechunked(run: dict[str, Any]) -> dict[str, Any]:
    groups = run["groups"][1:]
    shares = [g["files_chunked"] / max(g["files_chunked"] + g["files_reused"], 1) for g in groups]
    chunked = [g["files_chunked"] for g in groups]
    return {
        "files_per_snapshot": run["groups"][0]["files_chunked"] + run["groups"][0]["files_reused"],
        "mean_files": statistics.fmean(chunked) if chunked else 0.0,
        "mean_share": statistics.fmean(shares) if shares else 0.0,
        "max_share": max(shares, default=0.0),
    }


def _floor(run: dict[str, Any], config: Path) -> dict[str, float]:
    """Files whose bytes no earlier snapshot of the run had: the least a cache keyed by
    file content must chunk (share of each extra snapshot's files)."""
    import yaml

    from retrieval_bench.files import iter_source_files

    ignore = tuple(yaml.safe_load(config.read_text())["datasets"][0].get("ignore", []))
    snaps = Path(run["workspace"]) / "cache" / "snapshots"
    mirror = next((snaps / "mirrors").iterdir())
    seen: set[str] = set()
    shares, dates = [], []
    for i, g in enumerate(run["groups"]):
        git = ["git", "--git-dir", str(mirror)]
        cmd = [*git, "rev-parse", f"{g['fingerprint']}^{{tree}}"]
        tree = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
        cmd = [*git, "log", "-1", "--format=%cs", g["fingerprint"]]
        dates.append(subprocess.run(cmd, capture_output=True, text=True).stdout.strip())
        files = [
            f.sha256 for f in iter_source_files(snaps / "repo-trees" / tree, extra_ignore=ignore)
        ]
        if i:
            shares.append(len(set(files) - seen) / max(len(files), 1))
        seen.update(files)
    return {
        "mean_share": statistics.fmean(shares) if shares else 0.0,
        "max_share": max(shares, default=0.0),
        "commit_dates": [min(dates), max(dates)] if dates else [],
    }


def _compare(a: Path, b: Path) -> dict[str, Any]:
    """Whether two run folders hold the same TREC runs and per-query metrics."""
    trec_a = sorted(p.relative_to(a) for p in (a / "runs").rglob("*.trec"))
    trec_b = sorted(p.relative_to(b) for p in (b / "runs").rglob("*.trec"))
    differ = [str(p) for p in trec_a if (a / p).read_bytes() != (b / p).read_bytes()]

    def metrics(folder: Path) -> list[str]:
        return sorted((folder / "query_metrics.jsonl").read_text().splitlines())

    return {
        "trec_files": len(trec_a),
        "same_trec_files": trec_a == trec_b,
        "trec_differ": differ,
        "query_metrics_identical": metrics(a) == metrics(b),
        "identical": trec_a == trec_b and not differ and metrics(a) == metrics(b),
    }


def _first_lines(run_dir: Path, qid: str) -> dict[str, list[str]]:
    """Per TREC file, the lines of question ``qid``."""
    return {
        str(p.relative_to(run_dir)): [
            ln for ln in p.read_text().splitlines() if ln.split(" ", 1)[0] == qid
        ]
        for p in sorted((run_dir / "runs").rglob("*.trec"))
    }


def _kib(n: float) -> str:
    return f"{n / 1024:,.0f} KiB"


def _markdown(r: dict[str, Any]) -> str:
    n, ratios, re, disk = r["snapshots"], r["ratios"], r["rechunked"], r["disk"]
    sec, ident = r["seconds"], r["identical"]
    naive_per = disk["naive"]["total"] / max(n, 1)
    lines = [
        f"# many_snapshots: {n} pytest-history snapshots "
        f"(bm25 + exact + rrf{' + dense' if r['dense'] else ''})",
        "",
        f"Commits {re['floor']['commit_dates'][0]} .. {re['floor']['commit_dates'][1]}; "
        f"{r['machine']['cpus']} CPUs, load {r['machine']['load_average_1m']:.2f}; "
        f"{r['date']}. Each scenario in a fresh process and workspace, imports warmed.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| (a) one cold snapshot (mean of {len(sec['one_cold_runs'])}: before and after (b)) "
        f"| {sec['one_cold']:.2f} s ({', '.join(f'{x:.2f}' for x in sec['one_cold_runs'])}) | |",
        f"| (b) {n} snapshots, shared caches | {sec['shared']:.2f} s | |",
        f"| (c) {n} snapshots, naive rebuild each | {sec['naive']:.2f} s | |",
        f"| (b) / (a) | {ratios['shared_over_one_cold']:.2f} | <= 5 |",
        f"| (c) / (a) | {ratios['naive_over_one_cold']:.2f} | |",
        f"| (c) / (b) | {ratios['naive_over_shared']:.2f} | |",
        f"| (b) per extra snapshot / (a) | {ratios['extra_snapshot_over_one_cold']:.3f} | |",
        "| (b) / (a), seconds inside the snapshot groups only (no clone, no outputs) | "
        f"{ratios['in_groups_shared_over_one_cold']:.2f} | |",
        f"| files re-chunked per extra snapshot, mean share | {re['mean_share']:.2%} "
        f"({re['mean_files']:.1f} of {re['files_per_snapshot']} files) | <= 2% |",
        f"| files re-chunked per extra snapshot, max share | {re['max_share']:.2%} | |",
        "| floor: files whose bytes no earlier snapshot had, mean / max share | "
        f"{re['floor']['mean_share']:.2%} / {re['floor']['max_share']:.2%} | |",
        f"| files chunked in (c) (every file of every snapshot) | {r['naive_rechunked_files']} | |",
        "| cache disk per extra snapshot, (b) after - (a) after, / (N-1) | "
        f"{_kib(disk['per_extra_snapshot']['total'])} | |",
        f"| cache disk per snapshot, (c) after / N | {_kib(naive_per)} | |",
        "| (b) and (c): identical TREC runs and per-query metrics | "
        f"{ident['shared_vs_naive']['identical']} | True |",
        "| (a)'s question: same TREC lines in (a) and (b) | "
        f"{ident['one_cold_vs_shared']} | True |",
        "",
        "Cache disk per extra snapshot in (b), by folder: "
        + ", ".join(f"{k} {_kib(v)}" for k, v in disk["per_extra_snapshot"].items() if k != "total")
        + ". The caches only grow during a run, so the disk after it is the peak (the "
        "link path writes no temporary tarball but for files git converts).",
        *(
            [
                "",
                "With dense: the embedding cache has no switch, so (c) too embeds only the "
                "chunk texts no earlier snapshot had; dense dominates every scenario.",
            ]
            if r["dense"]
            else []
        ),
        "",
        "Seconds per phase (provenance `snapshot_groups`; walk_chunk includes chunking "
        "the new files):",
        "",
        "| phase | (b) first snapshot | (b) mean extra snapshot | (c) mean extra snapshot |",
        "|---|---|---|---|",
    ]
    ph_b, ph_c = r["phases"]["shared"], r["phases"]["naive"]
    for key, first in ph_b["first_snapshot"].items():
        extra_b = ph_b["mean_extra_snapshot"].get(key, 0.0)
        extra_c = ph_c["mean_extra_snapshot"].get(key, 0.0)
        lines.append(f"| {key} | {first:.3f} | {extra_b:.3f} | {extra_c:.3f} |")
    for label, ph in (("(b)", ph_b), ("(c)", ph_c)):
        stages = ", ".join(f"{s} {v:.3f}" for s, v in ph["stage_seconds_per_snapshot"].items())
        lines.append(
            f"\nStage seconds per snapshot in {label}: {stages}; outside the snapshot groups "
            f"(mirror clone, planning, outputs, database): {ph['outside_groups_s']:.2f} s."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--dense", action="store_true", help="add the dense retriever")
    parser.add_argument("--out", type=Path, default=RESULTS, help="result JSON (.md beside it)")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return
    rows = _questions(args.snapshots, QUESTIONS)
    n = len(rows)
    tmp = Path(tempfile.mkdtemp(prefix="rbench-many-snapshots-"))
    try:
        # the cold unit is measured just before and just after (b), and the ratios use
        # their mean: the load of a shared machine drifts over minutes
        runs = {"one_cold": _scenario("one_cold", rows[:1], tmp, args.dense, {})}
        runs["shared"] = _scenario("shared", rows, tmp, args.dense, {})
        runs["one_cold_again"] = _scenario("one_cold_again", rows[:1], tmp, args.dense, {})
        runs["naive"] = _scenario("naive", rows, tmp, args.dense, NAIVE_ENV)
        colds = [runs[k]["total_s"] for k in ("one_cold", "one_cold_again")]
        a, b, c = statistics.fmean(colds), runs["shared"]["total_s"], runs["naive"]["total_s"]
        a_groups = statistics.fmean(_in_groups(runs[k]) for k in ("one_cold", "one_cold_again"))
        extra = max(n - 1, 1)
        disk = {
            k: (runs["shared"]["disk"][k] - runs["one_cold"]["disk"][k]) / extra
            for k in runs["shared"]["disk"]
        }
        first_id = rows[0]["id"]
        one_vs_shared = _first_lines(Path(runs["one_cold"]["out_dir"]), first_id) == _first_lines(
            Path(runs["shared"]["out_dir"]), first_id
        )
        result: dict[str, Any] = {
            "benchmark": "many_snapshots",
            "config": str(CONFIG.relative_to(ROOT)),
            "questions": str(QUESTIONS),
            "dense": args.dense,
            "snapshots": n,
            "seconds": {"one_cold": a, "one_cold_runs": colds, "shared": b, "naive": c},
            "ratios": {
                "shared_over_one_cold": b / a,
                "naive_over_one_cold": c / a,
                "naive_over_shared": c / b,
                "extra_snapshot_over_one_cold": (b - a) / extra / a,
                # the same without what is outside the snapshot groups (the mirror clone,
                # planning, outputs): the snapshots' own seconds
                "in_groups_shared_over_one_cold": _in_groups(runs["shared"]) / a_groups,
            },
            "rechunked": {**_rechunked(runs["shared"]), "floor": _floor(runs["shared"], CONFIG)},
            # the naive path chunks every file of every snapshot (it keeps no count)
            "naive_rechunked_files": sum(
                g["files_chunked"] + g["files_reused"] for g in runs["shared"]["groups"]
            ),
            "disk": {
                "one_cold": runs["one_cold"]["disk"],
                "shared": runs["shared"]["disk"],
                "naive": runs["naive"]["disk"],
                "per_extra_snapshot": disk,
            },
            "phases": {k: _phases(r) for k, r in runs.items()},
            "identical": {
                "shared_vs_naive": _compare(
                    Path(runs["shared"]["out_dir"]), Path(runs["naive"]["out_dir"])
                ),
                "one_cold_vs_shared": one_vs_shared,
            },
            "tables": {k: r["table"] for k, r in runs.items()},
            "failures": {k: r["failures"] for k, r in runs.items()},
            "naive_env": NAIVE_ENV,
        }
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    write_result(args.out, result)
    md = _markdown(json.loads(args.out.read_text()))
    args.out.with_suffix(".md").write_text(md)
    print(md)
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()

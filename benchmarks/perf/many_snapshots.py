"""Many snapshots of one repository: N snapshots against one cold one, per code version.

This tree's code, and with ``--against REV`` an older revision's beside it
(docs/datasets.md#per-question-snapshots, docs/architecture.md#caches).

``--workload pytest`` (default): the first N distinct commits of the pytest devset (each
question asked at its commit's parent) with ``benchmarks/configs/pytest-history.yaml``
(bm25 + exact + rrf). ``--workload sqlfluff``, a large repository with the full
pipeline: from ``<data root>/repos/sqlfluff.bundle`` (``$RBENCH_DATA_ROOT``, else the
devsets' parent; cloned bare before any clock), walking back from the newest
first-parent commit, each ``base`` whose first-parent child modifies a ``.py`` file and
has a message of >= 10 characters, asked at ``base``: the child's message, gold: its
modified ``.py`` files; every stage of ``benchmarks/configs/swebench-lite-dev-issue.yaml``
(bm25 variants, exact, bm25-files, rrf, ltr, code-graph) on ``*.py`` files. Either way
one question per snapshot, so N snapshot groups; ``--dense`` adds the dense retriever.
Each scenario runs in a fresh process and workspace (``RBENCH_HOME``, ``RBENCH_CACHE``
in a temp folder; imports and the chunker's tokenizer warmed before the clock):

(a) ``one_cold``: one snapshot (the first question), caches empty — the unit,
    measured just before and just after (b) (the mean: a shared machine's load drifts);
(b) ``shared``: all N snapshots with the shared caches (empty at the start);
(c) ``naive`` (skipped with ``--no-naive``): all N snapshots rebuilt from scratch each
    time: ``RBENCH_CHUNK_CACHE=0`` (no chunk cache, no bm25 token memo) and
    ``RBENCH_TREE_LINKS=0`` (every tree a full ``git archive`` extraction).

``--against REV`` runs (a), (b), (a) again also with the code of git revision REV (a
``git worktree`` in the temp folder, imported through ``PYTHONPATH``: the child records
``retrieval_bench.__file__``, checked to be the worktree's), each right after this
tree's run of the same scenario; (c) runs with this tree's code only.

Reported per code: (b) / (a) (target <= 5 for pytest, <= 3.5 for sqlfluff), (b)'s
seconds per extra snapshot / (a) (sqlfluff: <= 0.05), the same inside the snapshot
groups, peak RSS per scenario, files chunked per extra snapshot as a share of its files
(pytest: <= 2%) beside the floor (files whose bytes no earlier snapshot had), cache disk
per extra snapshot by folder, seconds per phase and per stage; (c) / (a); and whether
identical TREC runs and per-query metrics came from (b) and (c), (b) of this tree and
of REV, and (a)'s question in (a) and (b).

Usage::

    python benchmarks/perf/many_snapshots.py [--workload pytest|sqlfluff] [--snapshots 50]
        [--against REV] [--no-naive] [--dense] [--out PATH] [--keep]

writes ``benchmarks/perf/results/many_snapshots.json`` (sqlfluff:
``many_snapshots_sqlfluff.json``) and ``.md`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from perf_common import (  # sibling module: the scripts run standalone
    DATA_ROOT,
    DEVSETS,
    commit_question,
    disk_usage,
    git,
    timed_run,
    write_result,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "benchmarks" / "configs"
QUESTIONS = DEVSETS / "pytest-7.4.0.jsonl"
BUNDLE = DATA_ROOT / "repos" / "sqlfluff.bundle"
RESULTS = Path(__file__).resolve().parent / "results"
WORKLOADS: dict[str, dict[str, Any]] = {  # config, default result file, targets
    "pytest": {"config": CONFIGS / "pytest-history.yaml", "out": "many_snapshots.json",
               "targets": {"shared_over_one_cold": 5.0, "rechunked_mean_share": 0.02}},
    "sqlfluff": {"config": CONFIGS / "swebench-lite-dev-issue.yaml",
                 "out": "many_snapshots_sqlfluff.json",
                 "targets": {"shared_over_one_cold": 3.5, "extra_snapshot_over_one_cold": 0.05}},
}  # fmt: skip
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
COLD = ("one_cold", "one_cold_again")
Row = dict[str, Any]  # a question row (questions.jsonl)
Run = dict[str, Any]  # one scenario's measurements


def _config_data(workload: str, questions: str, dense: bool = False) -> dict[str, Any]:
    """The workload's config as data, asking the questions in ``questions``."""
    config = WORKLOADS[workload]["config"]
    data: dict[str, Any] = yaml.safe_load(config.read_text())
    if workload == "sqlfluff":
        data["datasets"] = [{"name": "sqlfluff-history", "questions": questions,
                             "include": ["*.py"]}]  # fmt: skip
        data["repos"] = {"sqlfluff/sqlfluff": str(BUNDLE)}
        for fusion in (f for f in data.get("fusions", []) if "model_file" in f):  # ltr
            fusion["model_file"] = str((config.parent / fusion["model_file"]).resolve())
    else:
        data["datasets"][0]["questions"] = questions
    if dense:
        data["retrievers"].append({"name": "dense"})
    return data


# ----------------------------------------------------------------------------- child


def _child(spec: dict[str, Any]) -> None:
    """One scenario in this (fresh) process; writes its measurements to spec['result']."""
    import retrieval_bench
    from retrieval_bench.config import load_parsed

    config = WORKLOADS[spec["workload"]]["config"]
    data = _config_data(spec["workload"], spec["questions"], spec["dense"])
    cfg = load_parsed(data, config, config.parent)  # ${RBENCH_DATA_ROOT} expanded too
    total, result, prov = timed_run(cfg, Path(spec["workspace"]))
    dataset = prov["datasets"][cfg.datasets[0].name]
    out = {
        "total_s": total,
        "out_dir": str(result.out_dir),
        "package": str(Path(retrieval_bench.__file__).resolve()),
        "groups": dataset.get("snapshot_groups", []),
        "failures": dataset.get("snapshot_failures", []),
        "stage_seconds": {s: row["seconds"] for s, row in result.tables["all"].items()},
        "table": {
            s: {k: row[k] for k in ("Acc@5", "MRR", "R@10")}
            for s, row in result.tables["all"].items()
        },
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    Path(spec["result"]).write_text(json.dumps(out))


# ----------------------------------------------------------------------------- parent


def _questions(n: int, path: Path) -> list[Row]:
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


def _sqlfluff_rows(git_dir: Path, n: int) -> list[Row]:
    """The bare clone of the bundle, and ``n`` questions from its newest commits."""
    subprocess.run(["git", "clone", "-q", "--bare", str(BUNDLE), str(git_dir)], check=True)
    commits = git(git_dir, "rev-list", "--first-parent", "HEAD").split()  # newest first
    rows: list[Row] = []
    for child, base in zip(commits, commits[1:], strict=False):
        row, _ = commit_question(git_dir, base, child, "sqlfluff/sqlfluff")
        if row is not None:
            rows.append(row)
            if len(rows) == n:
                break
    return rows


def _scenario(
    name: str, rows: list[Row], tmp: Path, spec: dict[str, Any], env: dict[str, str]
) -> Run:
    """One scenario in a fresh process and workspace; ``env['PYTHONPATH']``: a worktree
    of another revision, whose ``retrieval_bench`` the child must have imported."""
    folder = tmp / name
    folder.mkdir()
    questions = folder / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = folder / "ws"
    spec = {**spec, "questions": str(questions), "workspace": str(ws),
            "result": str(folder / "result.json")}  # fmt: skip
    child_env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache"), **env}
    for key in ("RBENCH_CHUNK_CACHE", "RBENCH_TREE_LINKS"):
        if key not in env:
            child_env.pop(key, None)
    print(f"[{name}] {len(rows)} snapshot(s) ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    subprocess.run(cmd, env=child_env, check=True, cwd=ROOT)
    out: Run = json.loads((folder / "result.json").read_text())
    code = env.get("PYTHONPATH")
    if code and not Path(out["package"]).is_relative_to(Path(code).resolve()):
        raise SystemExit(f"[{name}] imported {out['package']}, not the worktree {code}")
    out["workspace"] = str(ws)
    out["disk"] = disk_usage(ws, CACHE_PARTS)
    print(f"[{name}] {out['total_s']:.1f}s", file=sys.stderr, flush=True)
    return out


def _phases(run: Run) -> dict[str, Any]:
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


def _in_groups(run: Run) -> float:
    return float(sum(g.get("seconds", 0.0) for g in run["groups"]))


def _rechunked(run: Run) -> dict[str, Any]:
    groups = run["groups"][1:]
    shares = [g["files_chunked"] / max(g["files_chunked"] + g["files_reused"], 1) for g in groups]
    chunked = [g["files_chunked"] for g in groups]
    return {
        "files_per_snapshot": run["groups"][0]["files_chunked"] + run["groups"][0]["files_reused"],
        "mean_files": statistics.fmean(chunked) if chunked else 0.0,
        "mean_share": statistics.fmean(shares) if shares else 0.0,
        "max_share": max(shares, default=0.0),
    }


def _floor(run: Run, dataset: dict[str, Any]) -> dict[str, Any]:
    """Files whose bytes no earlier snapshot of the run had: the least a cache keyed by
    file content must chunk (share of each extra snapshot's files); the trees are the
    cache's ``repo-trees/<tree sha>``, walked with the dataset's ignore/include rules."""
    from retrieval_bench.files import iter_source_files

    ignore, include = tuple(dataset.get("ignore", [])), tuple(dataset.get("include", []))
    snaps = Path(run["workspace"]) / "cache" / "snapshots"
    mirror = next(p for p in (snaps / "mirrors").iterdir() if (p / "HEAD").exists())
    seen: set[str] = set()
    shares, dates = [], []
    for i, g in enumerate(run["groups"]):
        tree = git(mirror, "rev-parse", f"{g['fingerprint']}^{{tree}}").strip()
        dates.append(git(mirror, "log", "-1", "--format=%cs", g["fingerprint"]).strip())
        root = snaps / "repo-trees" / tree
        files = [f.sha256 for f in iter_source_files(root, extra_ignore=ignore, include=include)]
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
    differ = [
        str(p) for p in trec_a if p in trec_b and (a / p).read_bytes() != (b / p).read_bytes()
    ]

    def metrics(folder: Path) -> list[str]:
        return sorted((folder / "query_metrics.jsonl").read_text().splitlines())

    return {
        "trec_files": len(trec_a),
        "same_trec_files": trec_a == trec_b,
        "trec_differ": differ,
        "query_metrics_identical": metrics(a) == metrics(b),
        "identical": trec_a == trec_b and not differ and metrics(a) == metrics(b),
    }


def _first_lines(run: Run, qid: str) -> dict[str, list[str]]:
    """Per TREC file, the lines of question ``qid``."""
    run_dir = Path(run["out_dir"])
    return {
        str(p.relative_to(run_dir)): [
            ln for ln in p.read_text().splitlines() if ln.split(" ", 1)[0] == qid
        ]
        for p in sorted((run_dir / "runs").rglob("*.trec"))
    }


def _summary(runs: dict[str, Run], n: int, first_id: str) -> dict[str, Any]:
    """(a), (b), (a) again of one code: seconds, ratios, reuse, disk, phases, peak RSS."""
    one, shared = runs["one_cold"], runs["shared"]
    colds = [runs[k]["total_s"] for k in COLD]
    a, b = statistics.fmean(colds), shared["total_s"]
    a_groups = statistics.fmean(_in_groups(runs[k]) for k in COLD)
    extra = max(n - 1, 1)
    per_extra = {k: (shared["disk"][k] - one["disk"][k]) / extra for k in shared["disk"]}
    same_first = _first_lines(one, first_id) == _first_lines(shared, first_id)
    return {
        "seconds": {"one_cold": a, "one_cold_runs": colds, "shared": b},
        "ratios": {
            "shared_over_one_cold": b / a,
            "extra_snapshot_over_one_cold": (b - a) / extra / a,
            # the same without what is outside the snapshot groups (the mirror clone,
            # planning, outputs): the snapshots' own seconds
            "in_groups_shared_over_one_cold": _in_groups(shared) / a_groups,
        },
        "rechunked": _rechunked(shared),
        "disk": {"one_cold": one["disk"], "shared": shared["disk"],
                 "per_extra_snapshot": per_extra},
        "phases": {k: _phases(r) for k, r in runs.items()},
        "peak_rss_kib": {k: r["peak_rss_kib"] for k, r in runs.items()},
        "identical": {"one_cold_vs_shared": same_first},
        "tables": {k: r["table"] for k, r in runs.items()},
        "failures": {k: r["failures"] for k, r in runs.items()},
        "package": shared["package"],
    }  # fmt: skip


def _kib(n: float) -> str:
    return f"{n / 1024:,.0f} KiB"


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def _markdown(r: dict[str, Any]) -> str:
    n, ag, naive = r["snapshots"], r.get("against"), "naive" in r["seconds"]
    re_, disk, tg = r["rechunked"], r["disk"], r["targets"]
    sides = [r, ag] if ag else [r]
    dates = re_["floor"]["commit_dates"] or ["?", "?"]

    def row(label: str, cell: Any, target: str = "", rev: bool = True) -> str:
        cells = [cell(s) if rev or s is r else "" for s in sides] if callable(cell) else [cell]
        return f"| {label} | {' | '.join(cells + [''] * (len(sides) - len(cells)))} | {target} |"

    stages = list(r["tables"]["shared"])
    rss = " / ".join(("(a)", "(b)", "(a) again", *(["(c) (this tree)"] if naive else [])))
    lines = [
        f"# many_snapshots: workload {r['workload']}, {n} snapshots, config {r['config']}"
        + (f", this tree against {ag['rev']} ({ag['short']})" if ag else ""),
        "",
        f"Stages: {', '.join(stages)}{' (with dense)' if r['dense'] else ''}. Snapshot "
        f"commits {dates[0]} .. {dates[1]}; this tree: {r['commit'][:12]}"
        f"{' + uncommitted changes' if r['dirty'] else ''}; {r['machine']['cpus']} CPUs, "
        f"load {r['machine']['load_average_1m']:.2f}; {r['date']}. Each scenario in a fresh "
        "process and workspace, imports warmed"
        + (f"; {ag['short']}'s code imported from a git worktree (PYTHONPATH), each of its "
           "scenarios run right after this tree's same one" if ag else "") + ".",
        "",
        f"| measure | {' | '.join(['this tree', ag['short']] if ag else ['value'])} | target |",
        f"|---|{'---|' * len(sides)}---|",
        row(f"(a) one cold snapshot (mean of {len(r['seconds']['one_cold_runs'])}: before and "
            "after (b))", lambda s: f"{s['seconds']['one_cold']:.2f} s ("
            + ", ".join(f"{x:.2f}" for x in s["seconds"]["one_cold_runs"]) + ")"),
        row(f"(b) {n} snapshots, shared caches", lambda s: f"{s['seconds']['shared']:.2f} s"),
        *([row(f"(c) {n} snapshots, naive rebuild each",
               lambda s: f"{s['seconds']['naive']:.2f} s", rev=False)] if naive else []),
        row("(b) / (a)", lambda s: f"{s['ratios']['shared_over_one_cold']:.2f}",
            f"<= {tg['shared_over_one_cold']:g}"),
        *([row("(c) / (a)", lambda s: f"{s['ratios']['naive_over_one_cold']:.2f}", rev=False),
           row("(c) / (b)", lambda s: f"{s['ratios']['naive_over_shared']:.2f}", rev=False)]
          if naive else []),
        row("(b) per extra snapshot / (a)",
            lambda s: f"{s['ratios']['extra_snapshot_over_one_cold']:.3f}",
            f"<= {tg['extra_snapshot_over_one_cold']:g}" if "extra_snapshot_over_one_cold" in tg
            else ""),
        row("(b) / (a), seconds inside the snapshot groups only (no clone, no outputs)",
            lambda s: f"{s['ratios']['in_groups_shared_over_one_cold']:.2f}"),
        row(f"peak RSS {rss}",
            lambda s: " / ".join(_mib(v) for v in s["peak_rss_kib"].values())),
        row("files re-chunked per extra snapshot, mean share",
            lambda s: f"{s['rechunked']['mean_share']:.2%} ({s['rechunked']['mean_files']:.1f} "
            f"of {s['rechunked']['files_per_snapshot']} files)",
            f"<= {tg['rechunked_mean_share']:.0%}" if "rechunked_mean_share" in tg else ""),
        row("files re-chunked per extra snapshot, max share",
            lambda s: f"{s['rechunked']['max_share']:.2%}"),
        row("floor: files whose bytes no earlier snapshot had, mean / max share",
            f"{re_['floor']['mean_share']:.2%} / {re_['floor']['max_share']:.2%}"),
        *([row("files chunked in (c) (every file of every snapshot)",
               str(r["naive_rechunked_files"]))] if naive else []),
        row("cache disk per extra snapshot, (b) after - (a) after, / (N-1)",
            lambda s: _kib(s["disk"]["per_extra_snapshot"]["total"])),
        *([row("cache disk per snapshot, (c) after / N", _kib(disk["naive"]["total"] / max(n, 1)))]
          if naive else []),
        row("(b) and (c): identical TREC runs and per-query metrics",
            str(r["identical"]["shared_vs_naive"]["identical"]) if naive
            else "(c) not run (--no-naive)", "True"),
        row("(a)'s question: same TREC lines in (a) and (b)",
            lambda s: str(s["identical"]["one_cold_vs_shared"]), "True"),
    ]  # fmt: skip
    if ag:
        same, b_rev = ag["identical"]["shared_vs_this_tree"], ag["seconds"]["shared"]
        lines += [row(f"(b): identical TREC runs ({same['trec_files']} files) and per-query "
                      f"metrics, this tree and {ag['short']}", str(same["identical"]), "True"),
                  "", f"(b): this tree {r['seconds']['shared']:.2f} s, {ag['short']} "
                  f"{b_rev:.2f} s ({ag['short']} / this tree: "
                  f"{b_rev / r['seconds']['shared']:.2f})."]  # fmt: skip
    lines += [
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
            if r["dense"] and naive
            else []
        ),
        "",
        "Seconds per phase (provenance `snapshot_groups`; walk_chunk includes chunking "
        "the new files):",
        "",
    ]
    cols = [("(b)", r["phases"]["shared"])]
    cols += [(f"{ag['short']} (b)", ag["phases"]["shared"])] if ag else []
    heads = [f"{c} first snapshot | {c} mean extra snapshot" for c, _ in cols]
    heads += ["(c) mean extra snapshot"] if naive else []
    lines += [f"| phase | {' | '.join(heads)} |", f"|---|{'---|---|' * len(cols)}{'---|' * naive}"]
    for key in r["phases"]["shared"]["first_snapshot"]:
        cells = [
            f"{ph['first_snapshot'].get(key, 0.0):.3f} | "
            f"{ph['mean_extra_snapshot'].get(key, 0.0):.3f}"
            for _, ph in cols
        ]
        if naive:
            cells.append(f"{r['phases']['naive']['mean_extra_snapshot'].get(key, 0.0):.3f}")
        lines.append(f"| {key} | {' | '.join(cells)} |")
    cols += [("(c)", r["phases"]["naive"])] if naive else []
    for label, ph in cols:
        per = ", ".join(f"{s} {v:.3f}" for s, v in ph["stage_seconds_per_snapshot"].items())
        lines.append(
            f"\nStage seconds per snapshot in {label}: {per}; outside the snapshot groups "
            f"(mirror clone, planning, outputs, database): {ph['outside_groups_s']:.2f} s."
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="pytest")
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--against", metavar="REV", help="also run (a), (b) with REV's code")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive scenario (c)")
    parser.add_argument("--dense", action="store_true", help="add the dense retriever")
    parser.add_argument("--out", type=Path, help="result JSON (.md beside it)")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return
    workload = WORKLOADS[args.workload]
    out_path: Path = args.out or RESULTS / workload["out"]
    tmp = Path(tempfile.mkdtemp(prefix="rbench-many-snapshots-"))
    worktree: Path | None = None
    try:
        if args.workload == "sqlfluff":
            rows = _sqlfluff_rows(tmp / "sqlfluff.git", args.snapshots)
        else:
            rows = _questions(args.snapshots, QUESTIONS)
        n, first_id = len(rows), rows[0]["id"]
        against: dict[str, Any] = {}
        if args.against:
            sha = git(None, "rev-parse", "--verify", f"{args.against}^{{commit}}").strip()
            against = {"rev": args.against, "sha": sha, "short": sha[:8]}
            worktree = tmp / f"code-{re.sub(r'[^A-Za-z0-9._-]', '_', args.against)}"
            cmd = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), sha]
            subprocess.run(cmd, check=True)
        spec = {"workload": args.workload, "dense": args.dense}
        # the cold unit is measured just before and just after (b), and the ratios use
        # their mean: the load of a shared machine drifts over minutes; REV's run of each
        # scenario follows this tree's at once
        runs: dict[str, Run] = {}
        rev_runs: dict[str, Run] = {}
        rev_env = {"PYTHONPATH": str(worktree)}
        for name in ("one_cold", "shared", "one_cold_again"):
            part = rows if name == "shared" else rows[:1]
            runs[name] = _scenario(name, part, tmp, spec, {})
            if worktree is not None:
                rev_runs[name] = _scenario(f"{name}-rev", part, tmp, spec, rev_env)
        if not args.no_naive:
            runs["naive"] = _scenario("naive", rows, tmp, spec, NAIVE_ENV)
        dataset = _config_data(args.workload, "")["datasets"][0]
        result: dict[str, Any] = {
            "benchmark": "many_snapshots",
            "workload": args.workload,
            "config": str(workload["config"].relative_to(ROOT)),
            "questions": str(BUNDLE if args.workload == "sqlfluff" else QUESTIONS),
            "commit": git(None, "rev-parse", "HEAD").strip(),
            "dirty": git(None, "status", "--porcelain", "--untracked-files=no").strip() != "",
            "dense": args.dense,
            "snapshots": n,
            "targets": workload["targets"],
            **_summary(runs, n, first_id),
            "naive_env": NAIVE_ENV,
        }
        result["rechunked"]["floor"] = _floor(runs["shared"], dataset)
        if "naive" in runs:
            c, b = runs["naive"]["total_s"], result["seconds"]["shared"]
            result["seconds"]["naive"] = c
            result["ratios"]["naive_over_one_cold"] = c / result["seconds"]["one_cold"]
            result["ratios"]["naive_over_shared"] = c / b
            result["disk"]["naive"] = runs["naive"]["disk"]
            # the naive path chunks every file of every snapshot (it keeps no count)
            result["naive_rechunked_files"] = sum(
                g["files_chunked"] + g["files_reused"] for g in runs["shared"]["groups"]
            )
            result["identical"]["shared_vs_naive"] = _compare(
                Path(runs["shared"]["out_dir"]), Path(runs["naive"]["out_dir"])
            )
        if rev_runs:
            result["against"] = {**against, **_summary(rev_runs, n, first_id)}
            result["against"]["identical"]["shared_vs_this_tree"] = _compare(
                Path(runs["shared"]["out_dir"]), Path(rev_runs["shared"]["out_dir"])
            )
    finally:
        if worktree is not None:
            cmd = ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)]
            subprocess.run(cmd, check=False)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    write_result(out_path, result)
    md = _markdown(json.loads(out_path.read_text()))
    out_path.with_suffix(".md").write_text(md)
    print(md)
    print(f"-> {out_path}" + (f"; kept {tmp}" if args.keep else ""))


if __name__ == "__main__":
    main()

"""The whole toolkit pipeline against a minimal whole-file BM25 baseline, many
snapshots, cold caches (docs/datasets.md#per-question-snapshots).

Measured, in one command: the whole ``benchmarks/configs/swebench-lite-dev-issue.yaml``
pipeline (every stage: bm25, exact, the bm25-files rungs, rrf, ltr and the
code-graph reranker) over the 22 swebench-lite-dev snapshots and over >= 30
sqlfluff snapshots whose commits are far apart, against a minimal whole-file
bm25s baseline written here, cold caches: pipeline time <= 2x the baseline's.
Workloads: ``swebench-lite-dev``, the first ``--swebench`` rows of
``$RBENCH_DATA_ROOT/swebench-lite-dev/swebench-lite-dev.jsonl`` (a tarball each);
``sqlfluff-far``, from ``repos/sqlfluff.bundle`` (cloned bare before any clock):
walking back from the newest first-parent commit, every ``--step``-th commit
``base`` whose first-parent child modifies a ``.py`` file and has a message of
>= 10 characters; asked at ``base``: the child's message, gold: its modified
``.py`` files.

Each side runs per workload in a fresh process, imports warmed before the clock.
The pipeline, in a fresh workspace (``RBENCH_HOME``, ``RBENCH_CACHE``), times
``run_benchmark`` (its own mirror clone of the bundle included); the baseline reads
each snapshot's ``.py`` files (tarball members, or one ``git cat-file --batch`` per
commit), indexes ``text + " " + path`` per file with bm25s and asks at k = 10.
Reported per workload: both sides' seconds, their ratio, seconds per snapshot, the
pipeline's phases and stages, peak RSS, cache disk, and Acc@k/MRR of both.

Usage::

    python benchmarks/perf/vs_whole_file_bm25.py [--sqlfluff 30] [--step 60]
        [--swebench 22] [--only sqlfluff-far,swebench-lite-dev] [--jobs N]
        [--out PATH] [--keep]

``--jobs N`` (N > 1) runs the pipeline's snapshot groups on a pool of N processes
(``executor: processes``); the baseline stays one process, so that ratio compares N
cores with one and is reported as such.

writes ``benchmarks/perf/results/vs_whole_file_bm25.json`` and ``.md`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_common import (  # sibling module: the scripts run standalone
    DATA_ROOT,
    commit_question,
    disk_usage,
    git,
    timed_run,
    write_result,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "configs" / "swebench-lite-dev-issue.yaml"
SWEBENCH = DATA_ROOT / "swebench-lite-dev" / "swebench-lite-dev.jsonl"
BUNDLE = DATA_ROOT / "repos" / "sqlfluff.bundle"
RESULTS = Path(__file__).resolve().parent / "results" / "vs_whole_file_bm25.json"
WORKLOADS = ("swebench-lite-dev", "sqlfluff-far")
KS = (1, 5, 10)
Row = dict[str, Any]  # a question row (questions.jsonl)


def _pipeline(spec: dict[str, Any]) -> dict[str, Any]:
    """The pipeline side of one workload (in a child process)."""
    import yaml

    from retrieval_bench.config import parse_config

    data = yaml.safe_load(CONFIG.read_text())
    dataset: dict[str, Any] = {"name": spec["workload"], "questions": spec["questions"]}
    if spec["workload"] == "sqlfluff-far":
        dataset["include"] = ["*.py"]
        data["repos"] = {"sqlfluff/sqlfluff": spec["bundle"]}
    data["datasets"] = [dataset]
    if spec.get("jobs", 1) > 1:
        data["executor"] = {"name": "processes", "jobs": spec["jobs"]}
    for fusion in (f for f in data["fusions"] if "model_file" in f):  # ltr: absolute path
        fusion["model_file"] = str((CONFIG.parent / fusion["model_file"]).resolve())
    cfg = parse_config(data, str(CONFIG), CONFIG.parent)
    total, result, prov = timed_run(cfg, Path(spec["workspace"]))
    ds = prov["datasets"][spec["workload"]]
    return {
        "total_s": total, "questions": ds.get("n_examples"),
        "failed_questions": len(ds.get("failed_questions", {})),
        "snapshot_failures": ds.get("snapshot_failures", []),
        "dataset_timings": ds.get("timings", {}), "groups": ds.get("snapshot_groups", []),
        "stages": {s: {k: row.get(k) for k in ("seconds", "Acc@1", "Acc@5", "Acc@10", "MRR")}
                   for s, row in result.tables["all"].items()},
    }  # fmt: skip


def _read_snapshot(row: Row, git_dir: str) -> tuple[list[str], list[str]]:
    """Paths and texts of the ``.py`` files of ``row``'s snapshot."""
    paths, texts = [], []
    if "snapshot" in row:
        with tarfile.open(row["snapshot"]) as tar:
            for m in tar:
                if m.isfile() and m.name.endswith(".py") and (f := tar.extractfile(m)):
                    paths.append(m.name.split("/", 1)[1])  # below the top folder <id>/
                    texts.append(f.read().decode("utf-8", errors="replace"))
        return paths, texts
    entries = [e.split("\t", 1) for e in git(Path(git_dir), "ls-tree", "-r", "-z",
               row["commit"]).split("\0") if e]  # fmt: skip
    blobs = [(p, m.split()[2]) for m, p in entries if p.endswith(".py") and " blob " in m]
    paths, shas = [p for p, _ in blobs], [sha for _, sha in blobs]
    cmd = ["git", "--git-dir", git_dir, "cat-file", "--batch"]
    out = subprocess.run(cmd, input="".join(s + "\n" for s in shas).encode(),
                         capture_output=True, check=True).stdout  # fmt: skip
    pos = 0
    for _ in shas:  # records: "<sha> blob <size>\n<bytes>\n"
        eol = out.index(b"\n", pos)
        size = int(out[pos:eol].split()[2])
        texts.append(out[eol + 1 : eol + 1 + size].decode("utf-8", errors="replace"))
        pos = eol + 2 + size
    return paths, texts


def _baseline(spec: dict[str, Any]) -> dict[str, Any]:
    """The baseline side of one workload (in a child process): whole-file bm25s."""
    import bm25s
    import numpy  # noqa: F401  (imported before the clock, as bm25s needs it)

    t0 = time.perf_counter()
    by_snapshot: dict[str, list[Row]] = {}
    for row in map(json.loads, Path(spec["questions"]).read_text().splitlines()):
        by_snapshot.setdefault(row.get("snapshot") or row["commit"], []).append(row)
    snapshots, ranks = [], {}
    for key, group in by_snapshot.items():
        t_read = time.perf_counter()
        paths, texts = _read_snapshot(group[0], spec["git_dir"])
        t_index = time.perf_counter()
        docs = [f"{text} {path}" for path, text in zip(paths, texts, strict=True)]
        model = bm25s.BM25()
        model.index(bm25s.tokenize(docs, stopwords="en", show_progress=False),
                    show_progress=False)  # fmt: skip
        t_query = time.perf_counter()
        for row in group:
            query = bm25s.tokenize([row["query"]], stopwords="en", return_ids=False,
                                   show_progress=False)  # fmt: skip
            found, _ = model.retrieve(query, k=min(10, len(docs)), show_progress=False)
            top = [paths[int(i)] for i in found[0]]
            gold = set(row["gold_files"])
            hits = [r for r, p in enumerate(top, 1) if p in gold]
            ranks[row["id"]] = {"first": hits[0] if hits else None,
                                "all": hits[-1] if len(hits) == len(gold) else None}  # fmt: skip
        end = time.perf_counter()
        snapshots.append({"snapshot": key, "files": len(paths), "read_s": t_index - t_read,
                          "index_s": t_query - t_index, "query_s": end - t_query})  # fmt: skip
    total = time.perf_counter() - t0
    n = max(len(ranks), 1)
    metrics = {f"Acc@{k}": sum(r["all"] is not None and r["all"] <= k
                               for r in ranks.values()) / n for k in KS}  # fmt: skip
    metrics["MRR"] = sum(1 / r["first"] for r in ranks.values() if r["first"]) / n
    return {"total_s": total, "questions": len(ranks), "snapshots": snapshots,
            "metrics": metrics, "ranks": ranks}  # fmt: skip


def _child(spec: dict[str, Any]) -> None:
    """One side of one workload in this (fresh) process; writes spec['result']."""
    out = _pipeline(spec) if spec["side"] == "pipeline" else _baseline(spec)
    out["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(spec["result"]).write_text(json.dumps(out))


def _swebench_rows(n: int) -> list[Row]:
    rows = [json.loads(ln) for ln in SWEBENCH.read_text().splitlines() if ln.strip()][:n]
    for row in rows:  # the questions file moves to a temp folder: absolute tarball paths
        row["snapshot"] = str((SWEBENCH.parent / row["snapshot"]).resolve())
    return rows


def _sqlfluff_rows(git_dir: Path, n: int, step: int) -> tuple[list[Row], dict[str, Any]]:
    """The bare clone of the bundle (timed for the record), and the questions from it."""
    t0 = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--bare", str(BUNDLE), str(git_dir)], check=True)
    source = {"bundle": str(BUNDLE), "step": step, "bare_clone_s": time.perf_counter() - t0}
    commits = git(git_dir, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    rows: list[Row] = []
    dates: list[str] = []
    for i in range(len(commits) - 1 - step, -1, -step):
        row, date = commit_question(git_dir, commits[i], commits[i + 1], "sqlfluff/sqlfluff")
        if row is not None:
            rows.append(row)
            dates.append(date)
        if len(rows) == n:
            break
    return rows, {**source, "commit_dates": [min(dates), max(dates)] if dates else []}


def _disk(ws: Path) -> dict[str, int]:
    """Bytes per folder of ws/cache (and of cache/snapshots), each inode counted once."""
    cache = ws / "cache"
    parts = sorted(p for p in cache.glob("*") if p.is_dir() and p.name != "snapshots")
    parts += sorted(p for p in (cache / "snapshots").glob("*") if p.is_dir())
    return disk_usage(ws, [p.relative_to(ws).as_posix() for p in parts])


def _side(side: str, workload: str, folder: Path, extra: dict[str, Any]) -> dict[str, Any]:
    ws = folder / f"ws-{side}"
    spec = {"side": side, "workload": workload, "workspace": str(ws),
            "result": str(folder / f"{side}.json"), **extra}  # fmt: skip
    env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache")}
    print(f"[{workload}] {side} ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)
    out: dict[str, Any] = json.loads((folder / f"{side}.json").read_text())
    if side == "pipeline":
        out["disk"] = _disk(ws)
    print(f"[{workload}] {side} {out['total_s']:.1f}s", file=sys.stderr, flush=True)
    return out


def _summary(pipe: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    groups = pipe["groups"]
    n = max(len(base["snapshots"]), 1)  # every snapshot, those the pipeline failed on too
    opened = [g.get("timings", {}).get("snapshot", 0.0) for g in groups]
    chunked = [g.get("timings", {}).get("chunk_index", 0.0) for g in groups]
    in_groups = [g.get("seconds", 0.0) for g in groups]
    rest = [s - o - c for s, o, c in zip(in_groups, opened, chunked, strict=True)]
    best = sorted(pipe["stages"].items(), key=lambda kv: -(kv[1].get("MRR") or 0.0))[:3]
    return {
        "snapshots": len(base["snapshots"]), "pipeline_groups_run": len(groups),
        "pipeline_s": pipe["total_s"], "baseline_s": base["total_s"],
        "ratio": pipe["total_s"] / base["total_s"],
        "pipeline_s_per_snapshot": pipe["total_s"] / n,
        "baseline_s_per_snapshot": base["total_s"] / n,
        "pipeline_phase_means": {k: statistics.fmean(v) if v else 0.0 for k, v in (
            ("snapshot_open", opened), ("walk_chunk", chunked), ("stages", rest))},
        "pipeline_outside_groups_s": pipe["total_s"] - sum(in_groups),
        "baseline_phase_means": {k: statistics.fmean(s[k] for s in base["snapshots"])
                                 for k in ("read_s", "index_s", "query_s")},
        "files_chunked": sum(g.get("files_chunked", 0) for g in groups),
        "files_reused": sum(g.get("files_reused", 0) for g in groups),
        "peak_rss_kib": {"pipeline": pipe["peak_rss_kib"], "baseline": base["peak_rss_kib"]},
        "cache_disk_per_snapshot": pipe["disk"]["total"] / n,
        "best_stages_by_mrr": dict(best), "baseline_metrics": base["metrics"],
    }  # fmt: skip


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


def _join(values: Any, sep: str = " / ") -> str:
    return sep.join(f"{v:.3f}" for v in values)


MD_ROWS: list[tuple[str, Any]] = [  # (label, (summary, pipeline) -> cell)
    ("snapshots (run by the pipeline); questions (failed)", lambda s, p: f"{s['snapshots']} "
     f"({s['pipeline_groups_run']}); {p['questions']} ({p['failed_questions']})"),
    ("pipeline seconds", lambda s, p: f"{s['pipeline_s']:.2f}"),
    ("baseline seconds", lambda s, p: f"{s['baseline_s']:.2f}"),
    ("pipeline / baseline", lambda s, p: f"**{s['ratio']:.2f}**"),
    ("pipeline s per snapshot", lambda s, p: f"{s['pipeline_s_per_snapshot']:.3f}"),
    ("baseline s per snapshot", lambda s, p: f"{s['baseline_s_per_snapshot']:.3f}"),
    ("pipeline mean s per snapshot: open / walk + chunk / stages + scoring",
     lambda s, p: _join(s["pipeline_phase_means"].values())),
    ("pipeline s outside the snapshot groups (mirror clone, plan, outputs)",
     lambda s, p: f"{s['pipeline_outside_groups_s']:.2f}"),
    ("pipeline files chunked / reused", lambda s, p: f"{s['files_chunked']} / {s['files_reused']}"),
    ("baseline mean s per snapshot: read / tokenize + index / query",
     lambda s, p: _join(s["baseline_phase_means"].values())),
    ("peak RSS pipeline / baseline",
     lambda s, p: " / ".join(_mib(v) for v in s["peak_rss_kib"].values())),
    ("pipeline cache disk per snapshot", lambda s, p: _mib(s["cache_disk_per_snapshot"] / 1024)),
    ("baseline Acc@1 / Acc@5 / Acc@10 / MRR", lambda s, p: _join(s["baseline_metrics"].values())),
]  # fmt: skip
TARGETS = {"pipeline / baseline": "<= 2"}


def _markdown(r: dict[str, Any]) -> str:
    per, load = r["workloads"], r["load_average_1m"]
    names = list(per)
    clone = per.get("sqlfluff-far", {}).get("source", {}).get("bare_clone_s")
    lines = [
        "# vs_whole_file_bm25: the swebench-lite-dev-issue pipeline against whole-file bm25s",
        "",
        f"{r['machine']['cpus']} CPUs, 1-min load {load['before']:.2f} before, "
        f"{load['after']:.2f} after; {r['date']}; commit {r['commit'][:12]}"
        f"{' (dirty tree)' if r['dirty'] else ''}. Each side in a fresh process, imports "
        "warmed; the pipeline in a fresh workspace (cold caches), run first, then the "
        "baseline"
        + (f"; the pipeline on {r['pipeline_jobs']} worker processes, the baseline on one"
           if r.get("pipeline_jobs", 1) > 1 else "")
        + ". The pipeline's mirror clone of the bundle is inside its time, not timed "
        "apart (it is in 'outside the snapshot groups')"
        + (f"; the script's own bare clone, before either clock, took {clone:.2f} s" if clone
           else "") + ".",
        "",
        f"| measure | {' | '.join(names)} | target |",
        f"|---|{'---|' * len(names)}---|",
        *(f"| {label} | {' | '.join(fn(per[w]['summary'], per[w]['pipeline']) for w in names)} "
          f"| {TARGETS.get(label, '')} |" for label, fn in MD_ROWS),
    ]  # fmt: skip
    for w in names:
        s, p, dates = per[w]["summary"], per[w]["pipeline"], per[w]["source"].get("commit_dates")
        best = ", ".join(
            f"{k} {_join((v['Acc@5'], v['MRR']))}" for k, v in s["best_stages_by_mrr"].items()
        )
        disk = ", ".join(f"{k} {_mib(v / 1024)}" for k, v in p["disk"].items())
        lines += [
            "", f"## {w}", "",
            *([f"Snapshot commits dated {dates[0]} .. {dates[1]}.", ""] if dates else []),
            f"Best pipeline stages by MRR (Acc@5 / MRR): {best}. Cache disk after the run: "
            f"{disk}.", "",
            "| stage | seconds | Acc@1 | Acc@5 | Acc@10 | MRR |", "|---|---|---|---|---|---|",
            *(f"| {k} | {v['seconds']:.2f} | "
              f"{_join((v[m] for m in ('Acc@1', 'Acc@5', 'Acc@10', 'MRR')), ' | ')} |"
              for k, v in p["stages"].items()),
            f"| *baseline (whole-file bm25s, k=10)* | {s['baseline_s']:.2f} | "
            f"{_join(s['baseline_metrics'].values(), ' | ')} |",
        ]  # fmt: skip
    note = ("Acc@k: all gold files in the top k; MRR: 1 / rank of the first gold file (the "
            "baseline's list stops at 10, so its MRR counts a first gold file below 10 as 0). "
            "Stage seconds: the stage's own, summed over the snapshots (stages that share "
            "another's index or runs show little).")  # fmt: skip
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlfluff", type=int, default=30, help="sqlfluff-far questions")
    parser.add_argument("--step", type=int, default=60, help="first-parent commits apart")
    parser.add_argument("--swebench", type=int, default=22, help="the first N swebench rows")
    parser.add_argument("--only", action="append", help=f"workload(s) of {', '.join(WORKLOADS)}")
    parser.add_argument("--jobs", type=int, default=1, help="pipeline worker processes")
    parser.add_argument("--out", type=Path, default=RESULTS, help="result JSON (.md beside it)")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(json.loads(args.child))
    only = [w for v in args.only or WORKLOADS for w in str(v).split(",") if w]
    if unknown := set(only) - set(WORKLOADS):
        parser.error(f"unknown workload(s) {sorted(unknown)}: choose from {WORKLOADS}")
    workloads = [w for w in WORKLOADS if w in only]
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="rbench-vs-bm25-"))
    per: dict[str, dict[str, Any]] = {}  # workload -> source, pipeline, baseline, summary
    try:
        git_dir = tmp / "sqlfluff.git"
        for w in workloads:
            folder = tmp / w
            folder.mkdir()
            if w == "sqlfluff-far":
                rows, source = _sqlfluff_rows(git_dir, args.sqlfluff, args.step)
            else:
                rows, source = _swebench_rows(args.swebench), {"questions": str(SWEBENCH)}
            questions = folder / "questions.jsonl"
            questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
            extra = {"questions": str(questions), "bundle": str(BUNDLE), "git_dir": str(git_dir),
                     "jobs": args.jobs}  # fmt: skip
            pipe = _side("pipeline", w, folder, extra)
            base = _side("baseline", w, folder, extra)
            per[w] = {"source": source, "summary": _summary(pipe, base), "pipeline": pipe,
                      "baseline": base}  # fmt: skip
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = {
        "benchmark": "vs_whole_file_bm25", "config": str(CONFIG.relative_to(ROOT)),
        "commit": git(None, "rev-parse", "HEAD", check=False).strip(),
        "pipeline_jobs": args.jobs,
        "dirty": bool(git(None, "status", "--porcelain", "--untracked-files=no", check=False)
                      .strip()),
        "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
        "workloads": per,
    }  # fmt: skip
    write_result(args.out, result)
    md = _markdown(json.loads(args.out.read_text()))
    args.out.with_suffix(".md").write_text(md)
    print(md + f"-> {args.out}" + (f"; kept {tmp}" if args.keep else ""))


if __name__ == "__main__":
    main()

"""The whole toolkit pipeline against a minimal whole-file BM25 baseline, many
snapshots, cold caches (docs/datasets.md#per-question-snapshots).

Measured, in one command: the pipeline of ``--config`` (default
``benchmarks/configs/swebench-lite-dev-issue.yaml``; ``localization.yaml`` adds the
ltr models, ``hierarchical`` and ``function-ranker``), every stage, over the 22
swebench-lite-dev snapshots and over snapshots far apart in bundled histories,
against a minimal whole-file bm25s baseline written here, cold caches: pipeline
time <= 2x the baseline's (swebench-lite-dev: <= 3x); with ``--warm``, a re-run in
the same workspace <= 0.5x.
Workloads: ``swebench-lite-dev``, the first ``--swebench`` rows of
``$RBENCH_DATA_ROOT/swebench-lite-dev/swebench-lite-dev.jsonl`` (a tarball each; the
config's dataset of that name keeps its other keys, ``gold_functions`` included);
``<REPO>-far`` (``--far REPO=N[:STEP]``; ``sqlfluff-far`` from ``--sqlfluff N`` too),
from ``repos/<REPO>.bundle`` (cloned bare before any clock), repository id
``<REPO>/<REPO>``, ``.py`` files only: walking back from the newest first-parent
commit, every ``STEP``-th commit ``base`` whose first-parent child modifies a ``.py``
file and has a message of >= 10 characters; asked at ``base``: the child's message,
gold: its modified ``.py`` files (``perf_common.far_rows``).

Each side runs per workload in a fresh process, imports warmed before the clock.
The pipeline, in a fresh workspace (``RBENCH_HOME``, ``RBENCH_CACHE``), times
``run_benchmark`` (its own mirror clone of the bundle included); ``--warm`` then runs
it again, unchanged, in the same workspace and a fresh process. The baseline reads
each snapshot's ``.py`` files (tarball members, or one ``git cat-file --batch`` per
commit), indexes ``text + " " + path`` per file with bm25s and asks at k = 10.
Reported per workload: both sides' seconds, their ratio, seconds per snapshot, the
pipeline's phases and stages, peak RSS, cache disk (per folder, per snapshot, per
file chunked afresh), seconds per file chunked afresh (cold minus warm), the 1-min
load before and after each side, and Acc@k/MRR of both.

Usage::

    python benchmarks/perf/vs_whole_file_bm25.py [--config PATH] [--warm]
        [--far REPO=N[:STEP] ...] [--step 200] [--sqlfluff 30] [--swebench 22]
        [--only sqlfluff-far,swebench-lite-dev,REPO-far] [--jobs N] [--out PATH] [--keep]

Without ``--only``: swebench-lite-dev, sqlfluff-far and every ``--far``. ``--step``
sets the ``--far`` steps without their own (default 200) and sqlfluff-far's from
``--sqlfluff`` (default 60, as before ``--far``; ``--far sqlfluff=N`` replaces that
workload, 200 apart). ``--jobs N`` (N > 1) runs the
pipeline's snapshot groups on a pool of N processes (``executor: processes``); the
baseline stays one process, so that ratio compares N cores with one and is reported
as such.

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
import tempfile
from pathlib import Path
from typing import Any

from perf_common import (  # sibling module: the scripts run standalone
    DATA_ROOT,
    cache_disk,
    far_rows,
    git,
    timed_run,
    whole_file_bm25,
    write_result,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "benchmarks" / "configs" / "swebench-lite-dev-issue.yaml"
SWEBENCH = DATA_ROOT / "swebench-lite-dev" / "swebench-lite-dev.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "vs_whole_file_bm25.json"
SWEBENCH_NAME = "swebench-lite-dev"
KS = (1, 5, 10)
Row = dict[str, Any]  # a question row (questions.jsonl)


def _pipeline(spec: dict[str, Any]) -> dict[str, Any]:
    """The pipeline side of one workload (in a child process)."""
    import yaml

    from retrieval_bench.config import parse_config

    config = Path(spec["config"])
    data = yaml.safe_load(config.read_text())
    # the config's dataset of the workload's name keeps its other keys (gold_functions,
    # resolved against the config's folder); a far workload has no gold functions, and
    # its run, levels kept, shows no module or function table
    # (docs/metrics.md#function-and-module-level)
    same = [d for d in data.get("datasets", []) if d.get("name") == spec["workload"]]
    dataset: dict[str, Any] = {**(same[0] if same else {}), "name": spec["workload"],
                               "questions": spec["questions"]}  # fmt: skip
    if spec.get("repo"):
        dataset["include"] = ["*.py"]
        data["repos"] = {spec["repo"]: spec["bundle"]}
    data["datasets"] = [dataset]
    if spec.get("jobs", 1) > 1:
        data["executor"] = {"name": "processes", "jobs": spec["jobs"]}
    for fusion in (f for f in data["fusions"] if "model_file" in f):  # ltr: absolute path
        fusion["model_file"] = str((config.parent / fusion["model_file"]).resolve())
    cfg = parse_config(data, str(config), config.parent)
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


def _child(spec: dict[str, Any]) -> None:
    """One side of one workload in this (fresh) process; writes spec['result']."""
    if spec["side"] == "pipeline":
        out = _pipeline(spec)
    else:
        out = whole_file_bm25(Path(spec["questions"]), spec["git_dir"], KS)
    out["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(spec["result"]).write_text(json.dumps(out))


def _swebench_rows(n: int) -> list[Row]:
    rows = [json.loads(ln) for ln in SWEBENCH.read_text().splitlines() if ln.strip()][:n]
    for row in rows:  # the questions file moves to a temp folder: absolute tarball paths
        row["snapshot"] = str((SWEBENCH.parent / row["snapshot"]).resolve())
    return rows


def _side(
    side: str, workload: str, folder: Path, extra: dict[str, Any], label: str = ""
) -> dict[str, Any]:
    """One side in a fresh child process; ``label`` names a second pipeline run (the
    warm re-run), in the same workspace as the first. Records the 1-min load around it."""
    label = label or side
    ws = folder / f"ws-{side}"
    spec = {"side": side, "workload": workload, "workspace": str(ws),
            "result": str(folder / f"{label}.json"), **extra}  # fmt: skip
    env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache")}
    print(f"[{workload}] {label} ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    load_before = os.getloadavg()[0]
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)
    out: dict[str, Any] = json.loads((folder / f"{label}.json").read_text())
    out["load_1m"] = {"before": load_before, "after": os.getloadavg()[0]}
    if side == "pipeline":
        out["disk"] = cache_disk(ws)
    print(f"[{workload}] {label} {out['total_s']:.1f}s", file=sys.stderr, flush=True)
    return out


def _summary(
    pipe: dict[str, Any], base: dict[str, Any], warm: dict[str, Any] | None
) -> dict[str, Any]:
    """The headline numbers of one workload; ``warm`` is the re-run (None: not run)."""
    groups = pipe["groups"]
    new = sum(g.get("files_chunked", 0) for g in groups)  # files chunked afresh (cold)
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
        "files_chunked": new,
        "files_reused": sum(g.get("files_reused", 0) for g in groups),
        "peak_rss_kib": {"pipeline": pipe["peak_rss_kib"], "baseline": base["peak_rss_kib"]},
        "cache_disk_per_snapshot": pipe["disk"]["total"] / n,
        "cache_disk_per_new_blob": pipe["disk"]["total"] / new if new else None,
        "best_stages_by_mrr": dict(best), "baseline_metrics": base["metrics"],
        "warm": None if warm is None else {
            "pipeline_s": warm["total_s"], "ratio": warm["total_s"] / base["total_s"],
            "s_per_new_blob": (pipe["total_s"] - warm["total_s"]) / new if new else None,
            "files_chunked": sum(g.get("files_chunked", 0) for g in warm["groups"]),
            "files_reused": sum(g.get("files_reused", 0) for g in warm["groups"]),
            "peak_rss_kib": warm["peak_rss_kib"],
            "cache_disk_growth": warm["disk"]["total"] - pipe["disk"]["total"]},
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
    ("pipeline cache disk per new blob (file chunked afresh)",
     lambda s, p: _opt(s["cache_disk_per_new_blob"], lambda v: f"{v / 1024:,.1f} KiB")),
    ("baseline Acc@1 / Acc@5 / Acc@10 / MRR", lambda s, p: _join(s["baseline_metrics"].values())),
]  # fmt: skip
WARM_ROWS: list[tuple[str, Any]] = [  # shown with --warm; s["warm"]: the re-run's summary
    ("pipeline warm re-run seconds", lambda s, p: f"{s['warm']['pipeline_s']:.2f}"),
    ("warm / baseline", lambda s, p: f"**{s['warm']['ratio']:.2f}**"),
    ("warm re-run files chunked / reused",
     lambda s, p: f"{s['warm']['files_chunked']} / {s['warm']['files_reused']}"),
    ("pipeline s per new blob: (cold - warm) / files chunked",
     lambda s, p: _opt(s["warm"]["s_per_new_blob"], lambda v: f"{v * 1000:.2f} ms")),
    ("warm re-run peak RSS", lambda s, p: _mib(s["warm"]["peak_rss_kib"])),
    ("warm re-run cache disk growth", lambda s, p: _mib(s["warm"]["cache_disk_growth"] / 1024)),
]  # fmt: skip
TARGETS = {"pipeline / baseline": "<= 2 (swebench-lite-dev: <= 3)", "warm / baseline": "<= 0.5"}


def _opt(value: float | None, fmt: Any) -> str:
    return "-" if value is None else str(fmt(value))


def _warm_cell(again: dict[str, Any] | None, stage: str) -> str:
    """The warm re-run's seconds of ``stage`` as a table cell (none without --warm)."""
    return "" if again is None else f" {again['stages'][stage]['seconds'] or 0.0:.2f} |"


def _load(side: dict[str, Any] | None) -> str:
    return "-" if side is None else "{before:.2f} -> {after:.2f}".format(**side["load_1m"])


def _markdown(r: dict[str, Any]) -> str:
    per, load, warm = r["workloads"], r["load_average_1m"], r.get("warm", False)
    names = list(per)
    clone = "; ".join(f"{w} {v['source']['bare_clone_s']:.2f} s" for w, v in per.items()
                      if "bare_clone_s" in v["source"])  # fmt: skip
    lines = [
        f"# vs_whole_file_bm25: the {Path(r['config']).stem} pipeline against whole-file "
        "bm25s", "",
        f"Config `{r['config']}`. {r.get('cpu_count', r['machine']['cpus'])} CPUs (os.cpu_"
        f"count()), 1-min load {load['before']:.2f} before, "
        f"{load['after']:.2f} after; {r['date']}; commit {r['commit'][:12]}"
        f"{' (dirty tree)' if r['dirty'] else ''}. Each side in a fresh process, imports "
        "warmed; the pipeline in a fresh workspace (cold caches), run first, "
        + ("then again in the same workspace, nothing changed (the warm re-run), " if warm
           else "") + "then the baseline"
        + (f"; the pipeline on {r['pipeline_jobs']} worker processes, the baseline on one"
           if r.get("pipeline_jobs", 1) > 1 else "")
        + ". The pipeline's mirror clone of the bundle is inside its time, not timed "
        "apart (it is in 'outside the snapshot groups')"
        + (f"; the script's own bare clones, before any clock, took {clone}" if clone
           else "") + ".",
        "",
        f"| measure | {' | '.join(names)} | target |",
        f"|---|{'---|' * len(names)}---|",
        *(f"| {label} | {' | '.join(fn(per[w]['summary'], per[w]['pipeline']) for w in names)} "
          f"| {TARGETS.get(label, '')} |" for label, fn in MD_ROWS + WARM_ROWS * warm),
    ]  # fmt: skip
    for w in names:
        s, p, dates = per[w]["summary"], per[w]["pipeline"], per[w]["source"].get("commit_dates")
        again = per[w].get("warm")
        best = ", ".join(
            f"{k} {_join((v['Acc@5'], v['MRR']))}" for k, v in s["best_stages_by_mrr"].items()
        )
        disk = ", ".join(f"{k} {_mib(v / 1024)}" for k, v in p["disk"].items())
        lines += [
            "", f"## {w}", "",
            *([f"Snapshot commits dated {dates[0]} .. {dates[1]}.", ""] if dates else []),
            f"Best pipeline stages by MRR (Acc@5 / MRR): {best}. Cache disk after the run: "
            f"{disk}. 1-min load before -> after: pipeline {_load(p)}, warm re-run "
            f"{_load(again)}, baseline {_load(per[w]['baseline'])}.", "",
            f"| stage | seconds |{' warm s |' * bool(again)} Acc@1 | Acc@5 | Acc@10 | MRR |",
            f"|---|---|{'---|' * bool(again)}---|---|---|---|",
            *(f"| {k} | {v['seconds']:.2f} |{_warm_cell(again, k)} "
              f"{_join((v[m] for m in ('Acc@1', 'Acc@5', 'Acc@10', 'MRR')), ' | ')} |"
              for k, v in p["stages"].items()),
            f"| *baseline (whole-file bm25s, k=10)* | {s['baseline_s']:.2f} |{' - |' * bool(again)}"
            f" {_join(s['baseline_metrics'].values(), ' | ')} |",
        ]  # fmt: skip
    note = ("Acc@k: all gold files in the top k; MRR: 1 / rank of the first gold file (the "
            "baseline's list stops at 10, so its MRR counts a first gold file below 10 as 0). "
            "Stage seconds: the stage's own, summed over the snapshots (stages that share "
            "another's index or runs show little). New blob: a file the cold run chunked "
            "afresh (files chunked, summed over the snapshot groups; a file met again is "
            "reused). Cache disk per new blob: the whole cache folder after the cold run "
            "(the bundle's mirror included) / files chunked. Seconds per new blob: (cold "
            "seconds - warm re-run seconds) / files chunked, an estimate of what the cold "
            "run spends per file on the work its caches keep.")  # fmt: skip
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=CONFIG, help="the pipeline's config")
    parser.add_argument("--far", action="append", default=[], metavar="REPO=N[:STEP]",
                        help="N questions from repos/REPO.bundle, STEP apart")  # fmt: skip
    parser.add_argument("--sqlfluff", type=int, default=30, help="sqlfluff-far questions")
    parser.add_argument("--step", type=int, help="first-parent commits apart (default: "
                        "200; sqlfluff-far from --sqlfluff: 60)")  # fmt: skip
    parser.add_argument("--swebench", type=int, default=22, help="the first N swebench rows")
    parser.add_argument("--only", action="append", help="workload(s), comma-separated")
    parser.add_argument("--warm", action="store_true", help="re-run the pipeline warm")
    parser.add_argument("--jobs", type=int, default=1, help="pipeline worker processes")
    parser.add_argument("--out", type=Path, default=RESULTS, help="result JSON (.md beside it)")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(json.loads(args.child))
    far = {"sqlfluff-far": ("sqlfluff", args.sqlfluff, args.step or 60)}  # name: repo, n, step
    for entry in args.far:
        name, _, size = str(entry).partition("=")
        count, _, every = size.partition(":")
        if not (name and count.isdigit() and (every.isdigit() or not every)):
            parser.error(f"--far {entry}: expected REPO=N or REPO=N:STEP")
        far[f"{name}-far"] = (name, int(count), int(every or args.step or 200))
    known = [SWEBENCH_NAME, *far]
    only = [w for v in args.only or known for w in str(v).split(",") if w]
    if unknown := set(only) - set(known):
        parser.error(f"unknown workload(s) {sorted(unknown)}: choose from {known}")
    workloads = [w for w in known if w in only]
    bundles = {w: DATA_ROOT / "repos" / f"{far[w][0]}.bundle" for w in workloads if w in far}
    if missing := [str(b) for b in bundles.values() if not b.is_file()]:
        parser.error(f"no bundle {', '.join(missing)}")
    config = args.config.resolve()
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="rbench-vs-bm25-"))
    per: dict[str, dict[str, Any]] = {}  # workload -> source, pipeline, baseline, summary
    try:
        for w in workloads:
            folder = tmp / w
            folder.mkdir()
            git_dir, extra = folder / "bare.git", {"config": str(config), "jobs": args.jobs}
            if w in far:
                repo, n, step = far[w]
                extra |= {"bundle": str(bundles[w]), "repo": f"{repo}/{repo}"}
                rows, source = far_rows(bundles[w], git_dir, extra["repo"], n, step)
                if len(rows) < n:  # the history ran out: a smaller step finds more
                    print(f"[{w}] only {len(rows)} of {n} questions {step} commits apart",
                          file=sys.stderr, flush=True)  # fmt: skip
            else:
                rows, source = _swebench_rows(args.swebench), {"questions": str(SWEBENCH)}
            questions = folder / "questions.jsonl"
            questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
            extra |= {"questions": str(questions), "git_dir": str(git_dir)}
            pipe = _side("pipeline", w, folder, extra)
            again = _side("pipeline", w, folder, extra, "warm") if args.warm else None
            base = _side("baseline", w, folder, extra)
            per[w] = {"source": source, "summary": _summary(pipe, base, again),
                      "pipeline": pipe, "warm": again, "baseline": base}  # fmt: skip
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = {
        "benchmark": "vs_whole_file_bm25",
        "config": str(config.relative_to(ROOT) if config.is_relative_to(ROOT) else config),
        "commit": git(None, "rev-parse", "HEAD", check=False).strip(),
        "pipeline_jobs": args.jobs, "warm": args.warm, "cpu_count": os.cpu_count(),
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

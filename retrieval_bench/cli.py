"""The ``rbench`` command line (SPEC §6).

Exit codes: 0 success; 1 a run or command failed; 2 bad usage, config or
input (the one-line message says which input and what to do).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError, DatasetError, RBenchError, SnapshotError
from retrieval_bench.store.db import UnknownRunError
from retrieval_bench.workspace import Workspace

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _workspace(args: argparse.Namespace) -> Workspace:
    return Workspace(Path(args.workspace).resolve()) if args.workspace else Workspace.default()


def _progress_bar() -> Any:
    """A ``(label, fraction)`` callback drawing one tqdm bar per label on stderr."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(label: str, fraction: float) -> None:
        bar = bars.get(label)
        if bar is None:
            bar = bars[label] = tqdm(
                total=1000,
                desc=label,
                unit="‰",
                file=sys.stderr,
                leave=False,
                mininterval=0.3,
                disable=None,  # no bar when stderr is not a terminal
            )
        bar.n = int(fraction * 1000)
        bar.refresh()
        if fraction >= 1.0:
            bar.close()

    return update


# --------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.report import (
        format_answer_section,
        format_table,
        span_columns,
        stage_columns,
    )
    from retrieval_bench.harness.runner import run_benchmark

    cfg = load_config(args.config)
    if args.split:
        for ds in cfg.datasets:
            ds.split = args.split
    if args.limit:
        for ds in cfg.datasets:
            ds.limit = args.limit
    progress = None if args.json else _progress_bar()

    def announce(ds: Any) -> None:
        if args.json:
            return
        msg = f"{ds.spec.name}: {len(ds.examples)} questions, {len(ds.corpus.chunks)} chunks"
        print(msg, file=sys.stderr)
        for err in ds.row_errors:
            print(f"  warning: {ds.spec.questions}: {err}", file=sys.stderr)
        for qid, paths in ds.missing_gold.items():
            print(
                f"  warning: {qid}: gold file(s) not in snapshot: {', '.join(paths)}",
                file=sys.stderr,
            )

    result = run_benchmark(cfg, _workspace(args), progress=progress, on_dataset=announce)
    answers = result.answer_stage.summary() if result.answer_stage is not None else None
    if args.json:
        out = {"run_id": result.run_id, "tables": result.tables, "counts": result.counts}
        print(json.dumps({**out, "sweeps": result.sweeps, "answers": answers}))
        return EXIT_OK
    cols = stage_columns(cfg.table_k, cfg.metrics.budgets)
    all_rows = result.tables.get("all", {}).values()
    if any(r.get("llm_calls", 0) or r.get("llm_cache_hits", 0) for r in all_rows):
        cols += ["llm_calls", "llm_cache_hits"]
    for subset, table in result.tables.items():
        if subset != "all" and not args.all_subsets and not subset.startswith("leaks_path"):
            continue
        n = result.counts[subset]
        title = f"\n{cfg.name} [{subset}] ({n} queries, file level, k={cfg.table_k})"
        print(format_table(table, cols, result.stage_order, title))
        spans = span_columns(cfg.table_k)
        if subset == "all" and any(spans[0] in row for row in table.values()):
            title = f"\n{cfg.name} [{subset}] span level (queries with gold spans, k={cfg.table_k})"
            print(format_table(table, spans, result.stage_order, title))
    for stage, rows in result.sweeps.items():
        title = f"\n{stage}: threshold sweep (keep candidates scoring >= threshold; file level)"
        table = {f"{r['threshold']:.3g}": r for r in rows}
        print(
            format_table(table, ["P", "R", "F1", "kept"], title=title).replace("stage", "t    ", 1)
        )
    if answers is not None:
        print(format_answer_section(cfg.name, answers))
    print(f"\nrun {result.run_id} stored in {result.out_dir} ({result.seconds:.1f}s)")
    return EXIT_OK


# ------------------------------------------------------------------- index
def _chunker_from_args(args: argparse.Namespace) -> Any:
    from retrieval_bench import registry

    params: dict[str, Any] = {}
    if args.budget:
        params["budget" if args.chunker == "ast" else "max_tokens"] = args.budget
    return registry.create("chunkers", args.chunker, **params)


def cmd_index(args: argparse.Namespace) -> int:
    from retrieval_bench import api

    bar = _progress_bar()
    stats = api.index(
        args.repo,
        _chunker_from_args(args),
        _workspace(args),
        Path(args.index_uri) if args.index_uri else None,
        rebuild=args.rebuild,
        progress=lambda x: bar("index", x),
    )
    print(f"index of {args.repo}: {stats}")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from retrieval_bench import api

    bar = _progress_bar()
    hits = api.query(
        args.repo,
        args.question,
        args.retriever,
        args.n,
        _chunker_from_args(args),
        _workspace(args),
        Path(args.index_uri) if args.index_uri else None,
        progress=lambda x: bar("index", x),
    )
    if args.json:
        rows = [
            {
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "symbol": c.symbol,
                "kind": c.kind,
                "score": s,
            }
            for c, s in hits
        ]
        print(json.dumps(rows))
        return EXIT_OK
    for rank, (chunk, score) in enumerate(hits, 1):
        sym = f"  {chunk.symbol}" if chunk.symbol else ""
        print(f"{rank:>3}. {score:8.4f}  {chunk.path}:{chunk.start_line}-{chunk.end_line}{sym}")
    return EXIT_OK


# ------------------------------------------------------------- runs / show
def cmd_runs(args: argparse.Namespace) -> int:
    from retrieval_bench.store.db import ResultsDB

    runs = ResultsDB(_workspace(args).db_path).list_runs()
    if args.json:
        print(
            json.dumps(
                [
                    {"id": r.id, "name": r.name, "status": r.status, "created_at": r.created_at}
                    for r in runs
                ]
            )
        )
        return EXIT_OK
    for r in runs:
        total = r.timings.get("total")
        took = f"{total:.1f}s" if isinstance(total, int | float) else "-"
        print(f"{r.id}  {r.status:<8} {took:>8}  {r.name}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from retrieval_bench.harness.report import (
        answer_aggregates,
        format_answer_table,
        format_table,
        stage_columns,
    )
    from retrieval_bench.store.db import ResultsDB

    db = ResultsDB(_workspace(args).db_path)
    run = db.get_run(args.run_id)
    table = db.stage_table(run.id, args.subset)
    if args.json:
        print(json.dumps({"run": run.id, "subset": args.subset, "table": table}))
        return EXIT_OK
    order = [s.stage for s in db.stages(run.id)]
    title = f"{run.name} [{args.subset}] run {run.id} ({run.status})"
    if run.config.get("kind") == "eval":  # an `rbench eval` run: its answer metrics
        cols = list(dict.fromkeys(m for row in table.values() for m in row))
    else:
        k = int(run.config.get("table_k", 10))
        cols = stage_columns(k, run.config.get("metrics", {}).get("budgets", [8000]))
    answer_row = table.pop("answer", None) if run.config.get("kind") != "eval" else None
    print(format_table(table, cols, [s for s in order if s in table], title))
    if answer_row is not None:
        print(format_answer_table(answer_aggregates(answer_row), f"\n{run.name} answers"))
    others = [s for s in db.subsets(run.id) if s != args.subset]
    if others:
        print(f"\nother subsets: {', '.join(others)}")
    return EXIT_OK


# ----------------------------------------------------------- compare / eval
def cmd_compare(args: argparse.Namespace) -> int:
    from retrieval_bench.harness.compare_cli import compare_command

    return compare_command(args, _workspace(args))


def cmd_eval(args: argparse.Namespace) -> int:
    from retrieval_bench.harness.eval_predictions import eval_command

    return eval_command(args, _workspace(args))


# ----------------------------------------------------------------- prompts
def cmd_prompts(args: argparse.Namespace) -> int:
    from retrieval_bench.prompt_eval.cli import prompts_command

    return prompts_command(args, _workspace(args))


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from retrieval_bench.web.app import create_app

    ws = _workspace(args)
    print(f"rbench: serving {ws.root} at http://{args.host}:{args.port}/", file=sys.stderr)
    uvicorn.run(create_app(ws), host=args.host, port=args.port, log_level="warning")
    return EXIT_OK


# --------------------------------------------------------------------- llm
def cmd_llm(args: argparse.Namespace) -> int:
    from retrieval_bench.llm.local_server import LocalServer

    server = LocalServer(_workspace(args))
    if args.llm_cmd == "start":
        st = server.start(threads=args.threads)
        print(f"local model server running: {st.base_url} (pid {st.pid}, model {st.alias})")
    elif args.llm_cmd == "stop":
        print("stopped" if server.stop() else "no local model server was running")
    else:
        status = server.status()
        if args.json:
            print(json.dumps(status))
        elif status.get("running"):
            health = "healthy" if status.get("healthy") else "NOT answering"
            print(f"running at {status['base_url']} (pid {status['pid']}), {health}")
        else:
            print("not running (start it with: rbench llm start)")
            return EXIT_FAILED
    return EXIT_OK


# ----------------------------------------------------------------- dataset
def cmd_dataset(args: argparse.Namespace) -> int:
    from retrieval_bench.datasets import jsonl

    if args.dataset_cmd == "inspect":
        loaded = jsonl.load_examples(Path(args.file))
        splits: dict[str, int] = {}
        for e in loaded.examples:
            splits[e.split or "-"] = splits.get(e.split or "-", 0) + 1
        print(
            f"{args.file}: {len(loaded.examples)} examples, splits {splits}, "
            f"fingerprint {jsonl.dataset_fingerprint(loaded.examples)[:16]}"
        )
        for err in loaded.errors:
            print(f"  error: {err}")
        if args.snapshot:
            from retrieval_bench.files import iter_source_files
            from retrieval_bench.snapshot import open_snapshot

            snap = open_snapshot(args.snapshot, _workspace(args).snapshots_dir)
            paths = {f.path for f in iter_source_files(snap.root)}
            for qid, missing in jsonl.check_gold(loaded.examples, paths).items():
                print(f"  missing gold: {qid}: {', '.join(missing)}")
        return EXIT_BAD_INPUT if loaded.errors else EXIT_OK
    if args.dataset_cmd == "import-swebench":
        from retrieval_bench.datasets import swebench

        result = swebench.load_swebench(Path(args.file))
        jsonl.write_examples(Path(args.out), result.examples)
        for err in result.errors:
            print(f"  error: {err}", file=sys.stderr)
        print(f"wrote {len(result.examples)} examples to {args.out}")
        return EXIT_OK
    if args.dataset_cmd == "mine":
        from retrieval_bench.datasets import gitmine

        mined = gitmine.mine_examples(Path(args.repo), args.range, last=args.last)
        jsonl.write_examples(Path(args.out), mined.examples)
        dropped = ", ".join(f"{k}={v}" for k, v in sorted(mined.dropped.items()))
        print(f"wrote {len(mined.examples)} examples to {args.out} (dropped: {dropped or 'none'})")
        return EXIT_OK
    raise ConfigError(f"unknown dataset command {args.dataset_cmd!r}")


# ------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rbench", description=__doc__.splitlines()[0])
    p.add_argument("--workspace", help="state folder (default ./.rbench or $RBENCH_HOME)")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run a benchmark config and print the per-stage table")
    r.add_argument("config")
    r.add_argument("--split", help="override every dataset's split (e.g. dev)")
    r.add_argument("--limit", type=int, help="first N questions of each dataset")
    r.add_argument("--all-subsets", action="store_true", help="also print per-dataset tables")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_run)

    for name, func, helptext in (
        ("index", cmd_index, "build or update the LanceDB index of a repository"),
        ("query", cmd_query, "search a repository with one retriever"),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("repo", help="folder, git+URL@COMMIT or NAME==VERSION")
        if name == "query":
            s.add_argument("question")
            s.add_argument("-n", type=int, default=10)
            s.add_argument("--retriever", default="dense")
            s.add_argument("--json", action="store_true")
        else:
            s.add_argument("--rebuild", action="store_true")
        s.add_argument("--chunker", default="ast")
        s.add_argument("--budget", type=int, default=None)
        s.add_argument("--index-uri", default=None, help="LanceDB folder (default in workspace)")
        s.set_defaults(func=func)

    rs = sub.add_parser("runs", help="list stored benchmark runs")
    rs.add_argument("--json", action="store_true")
    rs.set_defaults(func=cmd_runs)
    sh = sub.add_parser("show", help="print a stored run's per-stage table")
    sh.add_argument("run_id")
    sh.add_argument("--subset", default="all", help="e.g. leaks_path=false, dataset=shopapi")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_show)

    c = sub.add_parser(
        "compare",
        help="per-stage, per-metric deltas between stored runs, with paired significance tests",
    )
    c.add_argument(
        "runs",
        nargs="+",
        metavar="RUN[:STAGE]",
        help="run ids (the first is the baseline unless --gate/--baseline names one); "
        "RUN:STAGE compares one stage (e.g. RUN1:bm25 RUN2:rrf)",
    )
    c.add_argument("--baseline", help="the run every other run is compared with")
    c.add_argument("--metric", action="append", help="metric to compare (repeatable)")
    c.add_argument("--stage", action="append", help="only these stages (repeatable)")
    c.add_argument("--subset", default="all", help="e.g. leaks_path=false, dataset=shopapi")
    c.add_argument(
        "--test",
        default="randomisation",
        choices=["randomisation", "t", "wilcoxon", "bootstrap"],
        help="the paired significance test behind p and the marks",
    )
    c.add_argument("--alpha", type=float, default=0.05)
    c.add_argument("--resamples", type=int, default=10000)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument(
        "--gate",
        metavar="BASELINE",
        help="exit 1 when any run is significantly worse than BASELINE on the gate metric(s)",
    )
    c.add_argument(
        "--gate-metric", action="append", help="metric(s) the gate checks (default: the first)"
    )
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)

    ev = sub.add_parser(
        "eval", help="score a JSONL of predictions with any metric set (no retrieval needed)"
    )
    ev.add_argument("predictions", help="JSONL rows with prediction/answer and reference fields")
    ev.add_argument(
        "--metric",
        action="append",
        help="registry metric name, or NAME:key=value,... (repeatable; default: text metrics)",
    )
    ev.add_argument("--config", help="YAML/TOML with an answer_metrics: list (composites too)")
    ev.add_argument("--name", help="label stored with the run (default: the file name)")
    ev.add_argument("--out", help="also write per-sample scores to this JSONL")
    ev.add_argument("--no-store", action="store_true", help="do not record a run in the database")
    ev.add_argument(
        "--consistency",
        type=int,
        default=0,
        metavar="N",
        help="repeat LLM-judge metrics N times and report agreement/variance",
    )
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_eval)

    lm = sub.add_parser("llm", help="start, stop or check the local model server")
    lsub = lm.add_subparsers(dest="llm_cmd", required=True)
    ls = lsub.add_parser("start")
    ls.add_argument("--threads", type=int, default=None)
    lsub.add_parser("stop")
    lst = lsub.add_parser("status")
    lst.add_argument("--json", action="store_true")
    lm.set_defaults(func=cmd_llm)

    d = sub.add_parser("dataset", help="inspect, import or mine labelled questions")
    dsub = d.add_subparsers(dest="dataset_cmd", required=True)
    i = dsub.add_parser("inspect")
    i.add_argument("file")
    i.add_argument("--snapshot", help="check gold files against this snapshot")
    sw = dsub.add_parser("import-swebench")
    sw.add_argument("file")
    sw.add_argument("out")
    m = dsub.add_parser("mine")
    m.add_argument("repo")
    m.add_argument("out")
    m.add_argument("--range", default=None, help="git revision range (default: all history)")
    m.add_argument("--last", type=int, default=None, help="only the last N commits")
    d.set_defaults(func=cmd_dataset)

    from retrieval_bench.prompt_eval.cli import add_parser as add_prompts_parser

    add_prompts_parser(sub, cmd_prompts)

    sv = sub.add_parser("serve", help="web UI: runs, comparisons, drill-down, prompt lab")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.set_defaults(func=cmd_serve)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
        return code
    except (ConfigError, DatasetError, SnapshotError, UnknownRunError) as exc:
        print(f"rbench: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RBenchError as exc:
        print(f"rbench: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("rbench: interrupted; stored results are intact", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""rbench: measure and tune retrieval over codebases, stage by stage.

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
from retrieval_bench.harness.compare_defaults import DEFAULT_RESAMPLES
from retrieval_bench.progress import ProgressReporter
from retrieval_bench.store.db import CorruptDBError, RunInProgressError, UnknownRunError
from retrieval_bench.workspace import Workspace

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _workspace(args: argparse.Namespace) -> Workspace:
    return Workspace(Path(args.workspace).resolve()) if args.workspace else Workspace.default()


def _reporter(enabled: bool = True) -> ProgressReporter:
    """Progress on stderr: bars with counts and ETA on a terminal, else a plain line
    every few seconds (``$RBENCH_PROGRESS_INTERVAL``); nothing when not ``enabled``."""
    return ProgressReporter(sys.stderr, enabled=enabled)


def _loads_line(loads: dict[str, float]) -> str | None:
    """``model loading (not in the stage seconds): embedding model 5.2s``, or None."""
    if not loads:
        return None
    listed = ", ".join(f"{name} {sec:.1f}s" for name, sec in sorted(loads.items()))
    return f"model loading (not in the stage seconds): {listed}"


# --------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.report import (
        csv_tables,
        format_answer_section,
        format_table,
        span_columns,
        stage_columns,
    )
    from retrieval_bench.harness.runner import run_benchmark

    cfg = load_config(args.config)
    if args.k is not None:  # the printed cut-off; computed too if the config does not
        cfg.table_k = args.k
        if args.k not in cfg.metrics.ks:
            cfg.metrics.ks = sorted({*cfg.metrics.ks, args.k})
    if args.split:
        for ds in cfg.datasets:
            ds.split = args.split
    if args.limit is not None:
        for ds in cfg.datasets:
            ds.limit = args.limit

    def announce(ds: Any) -> None:
        # --json keeps stdout for the JSON alone; the warnings still go to stderr
        if not args.json:
            msg = f"{ds.spec.name}: {len(ds.examples)} questions, {len(ds.corpus.chunks)} chunks"
            print(msg, file=sys.stderr)
        for err in ds.row_errors:
            print(f"  warning: {ds.spec.questions}: {err}", file=sys.stderr)
        for qid, paths in ds.missing_gold.items():
            reasons = ds.missing_reasons
            why = ", ".join(f"{p} ({reasons.get(p, 'not in the snapshot')})" for p in paths)
            print(f"  warning: {qid}: gold file(s) not indexed: {why}", file=sys.stderr)

    # a line per dataset and stage, counts and ETA for the index and LLM calls (stderr)
    with _reporter(enabled=not args.json) as progress:
        result = run_benchmark(cfg, _workspace(args), progress=progress, on_dataset=announce)
    answers = result.answer_stage.summary() if result.answer_stage is not None else None
    if args.json:
        out = {"run_id": result.run_id, "tables": result.tables, "counts": result.counts}
        print(json.dumps({**out, "sweeps": result.sweeps, "answers": answers,
                          "loads": result.loads}))  # fmt: skip
        return EXIT_OK
    cols = stage_columns(cfg.table_k, cfg.metrics.budgets)
    all_rows = result.tables.get("all", {}).values()
    if any(r.get("llm_calls", 0) or r.get("llm_cache_hits", 0) for r in all_rows):
        cols += ["llm_calls", "llm_cache_hits"]
    shown = {
        subset: table
        for subset, table in result.tables.items()
        if subset == "all" or args.all_subsets or subset.startswith("leaks_path")
    }
    if args.format == "csv":  # the stage tables only, as one CSV (stdout stays parseable)
        print(csv_tables(shown, cols, result.stage_order))
        print(f"run {result.run_id} stored in {result.out_dir}", file=sys.stderr)
        return EXIT_OK
    fmt = args.format
    for subset, table in shown.items():
        n = result.counts[subset]
        title = f"\n{cfg.name} [{subset}] ({n} queries, file level, k={cfg.table_k})"
        print(format_table(table, cols, result.stage_order, title, fmt))
        spans = span_columns(cfg.table_k)
        if subset == "all" and any(spans[0] in row for row in table.values()):
            title = f"\n{cfg.name} [{subset}] span level (queries with gold spans, k={cfg.table_k})"
            print(format_table(table, spans, result.stage_order, title, fmt))
    for stage, rows in result.sweeps.items():
        title = f"\n{stage}: threshold sweep (keep candidates scoring >= threshold; file level)"
        table = {f"{r['threshold']:.3g}": r for r in rows}
        swept = format_table(table, ["P", "R", "F1", "kept"], title=title, fmt=fmt)
        print(swept.replace("stage", "t    " if fmt == "text" else "threshold", 1))
    if answers is not None:
        print(format_answer_section(cfg.name, answers))
    loads = _loads_line(result.loads)
    if loads:
        print(f"\n{loads}")
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

    with _reporter(enabled=not args.json) as progress:
        stats = api.index(
            args.repo,
            _chunker_from_args(args),
            _workspace(args),
            Path(args.index_uri) if args.index_uri else None,
            rebuild=args.rebuild,
            progress=progress,
        )
    if args.json:
        print(json.dumps({"repo": args.repo, **stats.to_json()}))
        return EXIT_OK
    print(f"index of {args.repo}:")
    for line in stats.summary():
        print(f"  {line}")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from retrieval_bench import api

    with _reporter() as progress:  # the index build before a dense search (stderr)
        hits = api.query(
            args.repo,
            args.question,
            args.retriever,
            args.n,
            _chunker_from_args(args),
            _workspace(args),
            Path(args.index_uri) if args.index_uri else None,
            progress=progress,
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
    from retrieval_bench.harness.runs_cli import runs_command

    return runs_command(args, _workspace(args))


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
        out = {"run": run.id, "subset": args.subset, "table": table}
        print(json.dumps({**out, "status": run.status, "error": run.error}))
        return EXIT_OK
    order = [s.stage for s in db.stages(run.id)]
    title = f"{run.name} [{args.subset}] run {run.id} ({run.status})"
    if run.config.get("kind") == "eval":  # an `rbench eval` run: its answer metrics
        cols = list(dict.fromkeys(m for row in table.values() for m in row))
    else:
        k = _show_k(run.id, run.config, args.k)
        cols = stage_columns(k, run.config.get("metrics", {}).get("budgets", [8000]))
        table_k = int(run.config.get("table_k", 10))
        if k != table_k and any(f"Lost@{k}" in row for row in table.values()):
            cols = [f"Lost@{k}" if c == "lost" else c for c in cols]  # "lost" is at table_k
        title += f" k={k}"
    answer_row = table.pop("answer", None) if run.config.get("kind") != "eval" else None
    rendered = format_table(table, cols, [s for s in order if s in table], title, args.format)
    if args.out:
        Path(args.out).write_text(rendered + "\n", encoding="utf-8")
        print(f"wrote the {args.format} table of run {run.id} to {args.out}", file=sys.stderr)
    else:
        print(rendered)
    # the rest is for a reader: with csv/markdown or --out, stdout is the table alone
    notes = sys.stdout if args.format == "text" and not args.out else sys.stderr
    if run.error:  # why it failed or was interrupted
        print(f"\n{run.status}: {run.error}", file=notes)
    if answer_row is not None:
        answers = format_answer_table(answer_aggregates(answer_row), f"\n{run.name} answers")
        print(answers, file=notes)
    loads = _loads_line({key[5:]: v for key, v in run.timings.items() if key.startswith("load:")})
    if loads:
        print(f"\n{loads}", file=notes)
    others = [s for s in db.subsets(run.id) if s != args.subset]
    if others:
        print(f"\nother subsets: {', '.join(others)}", file=notes)
    return EXIT_OK


def _show_k(run_id: str, config: dict[str, Any], wanted: int | None) -> int:
    """The cut-off ``rbench show`` prints: ``wanted`` if the run computed it (else a
    ConfigError listing the ks it has), by default the run's ``table_k``."""
    default = int(config.get("table_k", 10))
    if wanted is None:
        return default
    available = sorted({default, *(int(k) for k in config.get("metrics", {}).get("ks", []))})
    if wanted not in available:
        raise ConfigError(
            f"run {run_id} has no metrics at k={wanted}; it computed k = "
            f"{', '.join(map(str, available))} (rbench run -k {wanted} computes a new run)"
        )
    return wanted


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
        # one exit code for both forms, so scripts can test it: 0 running, 1 not
        return EXIT_OK if status.get("running") else EXIT_FAILED
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
def _positive_int(text: str) -> int:
    """An argparse type for counts (``--limit``, ``-n``): 0 or less would silently
    mean "all" or "all but the last", so it is a usage error (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number (1 or more)")
    return value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after an option's help, except where the default says
    nothing (None, False) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose subcommand parsers (made with ``add_subparsers``,
    which reuses the parent's class) all show their defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _RegistryNames(Sequence[str]):
    """The names registered under ``kind``, looked up only when argparse checks a
    value or prints the choices: the registries import their modules (LanceDB,
    tree-sitter...), which ``rbench runs`` should not pay for."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _names(self) -> list[str]:
        from retrieval_bench import registry

        return registry.names(self.kind)

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


TABLE_FORMATS = ("text", "csv", "markdown")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rbench", description=__doc__.splitlines()[0])
    p.add_argument("--workspace", help="state folder (default ./.rbench or $RBENCH_HOME)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens (INFO level)")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run a benchmark config and print the per-stage table")
    r.add_argument(
        "config", help="benchmark config (.yaml/.toml); its relative paths are resolved "
        "against the config file's folder"
    )  # fmt: skip
    r.add_argument("--split", help="override every dataset's split (e.g. dev)")
    r.add_argument("--limit", type=_positive_int, help="first N questions of each dataset")
    r.add_argument("--all-subsets", action="store_true", help="also print per-dataset tables")
    r.add_argument(
        "-k", "--k", type=_positive_int, dest="k", metavar="K",
        help="cut-off of the printed table (default: the config's table_k); "
        "added to metrics.ks when the config does not compute it",
    )  # fmt: skip
    r.add_argument(
        "--format", choices=TABLE_FORMATS, default="text",
        help="how to print the per-stage tables (csv: one table with a subset column)",
    )  # fmt: skip
    r.add_argument(
        "--json", action="store_true",
        help="print one JSON object (run id, tables, counts, sweeps, answers, loads) instead",
    )  # fmt: skip
    r.set_defaults(func=cmd_run)

    for name, func, helptext in (
        ("index", cmd_index, "build or update the LanceDB index of a repository"),
        ("query", cmd_query, "search a repository with one retriever"),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("repo", help="folder, git+URL@COMMIT or NAME==VERSION")
        if name == "query":
            s.add_argument("question", help="the question to search for")
            s.add_argument("-n", type=_positive_int, default=10, help="how many chunks to print")
            s.add_argument(
                "--retriever", default="dense", choices=_RegistryNames("retrievers"),
                metavar="NAME",  # a metavar: argparse would load the registry to print one
                help="one of %(choices)s (dense builds or updates the index first)",
            )  # fmt: skip
            s.add_argument(
                "--json", action="store_true",
                help="print a JSON list of hits (path, lines, symbol, kind, score)",
            )  # fmt: skip
        else:
            s.add_argument(
                "--rebuild", action="store_true",
                help="build from scratch instead of updating the changed files only",
            )  # fmt: skip
            s.add_argument("--json", action="store_true", help="print the build statistics as JSON")
        s.add_argument(
            "--chunker", default="ast", choices=_RegistryNames("chunkers"), metavar="NAME",
            help="how files are split into chunks: one of %(choices)s",
        )  # fmt: skip
        s.add_argument(
            "--budget", type=_positive_int, default=None, metavar="TOKENS",
            help="chunk size limit in tokens (ast: budget, others: max_tokens; "
            "default: the chunker's own)",
        )  # fmt: skip
        s.add_argument("--index-uri", default=None, help="LanceDB folder (default in workspace)")
        s.set_defaults(func=func)

    rs = sub.add_parser("runs", help="list stored benchmark runs")
    rs.add_argument("--json", action="store_true", help="print the runs as JSON")
    manage = rs.add_mutually_exclusive_group()
    manage.add_argument(
        "--delete", nargs="+", metavar="ID",
        help="delete these runs: their database rows and results/<ID>/ folders",
    )  # fmt: skip
    manage.add_argument(
        "--prune", action="store_true", help="delete every failed or interrupted run"
    )
    manage.add_argument(
        "--rebuild-db", action="store_true",
        help="move a damaged results database aside and reload the runs from results/",
    )  # fmt: skip
    rs.set_defaults(func=cmd_runs)
    sh = sub.add_parser("show", help="print a stored run's per-stage table")
    sh.add_argument("run_id", help="a run id from rbench runs")
    sh.add_argument("--subset", default="all", help="e.g. leaks_path=false, dataset=shopapi")
    sh.add_argument(
        "-k", "--k", type=_positive_int, dest="k", metavar="K",
        help="cut-off of the table (default: the run's table_k); one of the ks the run computed",
    )  # fmt: skip
    sh.add_argument("--format", choices=TABLE_FORMATS, default="text", help="table format")
    sh.add_argument("--out", metavar="FILE", help="write the table to FILE instead of stdout")
    sh.add_argument("--json", action="store_true", help="print the table as JSON")
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
    c.add_argument("--alpha", type=float, default=0.05, help="significance level")
    c.add_argument(
        "--resamples", type=int, default=DEFAULT_RESAMPLES,
        help="resamples of the randomisation/bootstrap tests and the CIs",
    )  # fmt: skip
    c.add_argument("--seed", type=int, default=0, help="random seed of the resampling")
    c.add_argument(
        "--gate",
        metavar="BASELINE",
        help="exit 1 when any run is significantly worse than BASELINE on the gate metric(s)",
    )
    c.add_argument(
        "--gate-metric", action="append", help="metric(s) the gate checks (default: the first)"
    )
    c.add_argument("--json", action="store_true", help="print every row as JSON")
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
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.set_defaults(func=cmd_eval)

    lm = sub.add_parser("llm", help="start, stop or check the local model server")
    lsub = lm.add_subparsers(dest="llm_cmd", required=True)
    ls = lsub.add_parser("start", help="start the local server (or reuse a running one)")
    ls.add_argument(
        "--threads", type=_positive_int, default=None,
        help="CPU threads of the model server (default: all cores)",
    )  # fmt: skip
    lsub.add_parser("stop", help="stop the local server")
    lst = lsub.add_parser(
        "status", help="is the local server running? exit 0 when it is, 1 when not "
        "(with or without --json)"
    )  # fmt: skip
    lst.add_argument("--json", action="store_true", help="print the status as JSON")
    lm.set_defaults(func=cmd_llm)

    d = sub.add_parser("dataset", help="inspect, import or mine labelled questions")
    dsub = d.add_subparsers(dest="dataset_cmd", required=True)
    i = dsub.add_parser("inspect", help="count examples and splits, report invalid rows")
    i.add_argument("file", help="questions JSONL")
    i.add_argument("--snapshot", help="check gold files against this snapshot")
    sw = dsub.add_parser("import-swebench", help="SWE-bench rows → questions JSONL")
    sw.add_argument("file", help="SWE-bench JSONL (problem statement + patch)")
    sw.add_argument("out", help="questions JSONL to write")
    m = dsub.add_parser("mine", help="questions from git history: message → modified files")
    m.add_argument("repo", help="git repository folder")
    m.add_argument("out", help="questions JSONL to write")
    m.add_argument("--range", default=None, help="git revision range (default: all history)")
    m.add_argument("--last", type=int, default=None, help="only the last N commits")
    d.set_defaults(func=cmd_dataset)

    from retrieval_bench.prompt_eval.cli import add_parser as add_prompts_parser

    add_prompts_parser(sub, cmd_prompts)

    sv = sub.add_parser("serve", help="web UI: runs, comparisons, drill-down, prompt lab")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on")
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
    except (
        ConfigError, DatasetError, SnapshotError, UnknownRunError, CorruptDBError,
        RunInProgressError,
    ) as exc:  # fmt: skip
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

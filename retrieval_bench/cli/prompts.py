"""``rbench prompts``: run use cases, see history, import/export rows and prompts
(docs/architecture.md#prompt-evaluation).

    rbench prompts list [USE_CASE]
    rbench prompts run USE_CASE [--prompt NAME ...] [--baseline NAME] [--json] [--gate]
    rbench prompts history [USE_CASE] [--prompt NAME] [--edits]
    rbench prompts import USE_CASE rows|prompts FILE [--format F] [--replace]
    rbench prompts export USE_CASE rows|prompts [--format F] [--out FILE [--force]]

A use case with nothing stored yet starts from its bundled examples. Exit
codes follow ``rbench``: 0 ok; 1 ``--gate`` found a prompt significantly
worse than the baseline (or a stale edit was refused); 2 bad input (the
message names the file and line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import EXIT_FAILED, EXIT_OK, workspace
from retrieval_bench.progress import ProgressReporter
from retrieval_bench.workspace import Workspace

EXIT_GATE_FAILED = EXIT_FAILED


def cmd_prompts(args: argparse.Namespace) -> int:
    """Run ``rbench prompts SUBCOMMAND``; returns the exit code."""
    from retrieval_bench.prompt_eval.store import PromptStore

    ws = workspace(args)
    with PromptStore.for_workspace(ws) as store:
        handler = {
            "list": _list,
            "run": _run,
            "history": _history,
            "import": _import,
            "export": _export,
        }[args.prompts_cmd]
        return handler(args, ws, store)


def _preview(value: Any, width: int = 48) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _list(args: argparse.Namespace, ws: Workspace, store: Any) -> int:
    from retrieval_bench.prompt_eval.io import ensure_examples, use_case_summaries
    from retrieval_bench.prompt_eval.report import aligned
    from retrieval_bench.prompt_eval.usecase import get_use_case

    if not args.use_case:
        # a shipped use case not used yet is listed with its bundled examples' sizes
        # and marked so, instead of looking like empty user data
        info = use_case_summaries(store)
        if args.json:
            keys = ("name", "rows", "prompts", "baseline", "shipped")
            listing = [{k: getattr(i, k) for k in keys} for i in info]
            print(json.dumps([{"use_case": d.pop("name"), **d} for d in listing]))
            return EXIT_OK
        rows = [[i.name, "shipped (not loaded yet)" if i.shipped else "stored", str(i.rows),
                 str(i.prompts), i.baseline or "-"] for i in info]  # fmt: skip
        print(aligned(["use case", "data", "rows", "prompts", "baseline"], rows, left=2))
        if any(i.shipped for i in info):
            print(
                "\nshipped examples are loaded on a use case's first use: "
                "rbench prompts list USE_CASE, rbench prompts run USE_CASE or the web lab"
            )
        return EXIT_OK
    uc = get_use_case(args.use_case)
    ensure_examples(store, uc)
    prompts, rows, baseline = store.prompts(uc.name), store.rows(uc.name), store.baseline(uc.name)
    if args.json:
        print(json.dumps({
            "use_case": uc.name, "variables": list(uc.variables), "fields": list(uc.fields),
            "baseline": baseline,
            "prompts": [{"name": p.name, "version": p.version, "model": p.model,
                         "parameters": dict(p.parameters)} for p in prompts],
            "rows": [{"id": r.id, "version": r.version, "variables": dict(r.variables),
                      "expected": dict(r.expected)} for r in rows],
        }))  # fmt: skip
        return EXIT_OK
    print(f"{uc.name}: {uc.description}")
    print(f"variables: {', '.join(uc.variables)}; ground-truth fields: {', '.join(uc.fields)}\n")
    prompt_rows = [
        [("* " if p.name == baseline else "  ") + p.name, str(p.version), p.model or "(default)",
         json.dumps(dict(p.parameters)), _preview(p.user)]
        for p in prompts
    ]  # fmt: skip
    print(
        aligned(["prompt (* baseline)", "v", "model", "parameters", "user prompt"], prompt_rows, 5)
    )
    print()
    data_rows = [
        [r.id, str(r.version), _preview(dict(r.variables), 40), _preview(dict(r.expected), 40)]
        for r in rows
    ]
    print(aligned(["row", "v", "variables", "expected"], data_rows, 4))
    return EXIT_OK


def _run(args: argparse.Namespace, ws: Workspace, store: Any) -> int:
    from retrieval_bench.llm import factory
    from retrieval_bench.llm.settings import LLMSpec
    from retrieval_bench.prompt_eval.report import format_run, run_to_json
    from retrieval_bench.prompt_eval.runner import run_use_case
    from retrieval_bench.prompt_eval.usecase import get_use_case

    uc = get_use_case(args.use_case)
    # rows done per prompt, with an ETA, on stderr (a bar on a terminal, else a line
    # every few seconds); --json keeps quiet. Starting the local model shows as well.
    with ProgressReporter(enabled=not args.json) as reporter:
        llm = factory.make_llm(LLMSpec(base_url=args.base_url, model=args.model), ws)
        try:
            run = run_use_case(
                uc,
                llm,
                store,
                only=args.prompt,
                baseline=args.baseline,
                alpha=args.alpha,
                record=not args.no_record,
                reporter=reporter,
            )
        finally:  # a local server this command started on demand stops with it
            factory.release_server(llm)
    print(json.dumps(run_to_json(run)) if args.json else format_run(uc, run))
    worse = [c for c in run.comparisons.values() if c.verdict == "worse" and c.significant]
    if args.gate and worse:
        names = ", ".join(c.candidate for c in worse)
        print(f"rbench: gate: significantly worse than {run.baseline}: {names}", file=sys.stderr)
        return EXIT_GATE_FAILED
    return EXIT_OK


def _history(args: argparse.Namespace, ws: Workspace, store: Any) -> int:
    from retrieval_bench.prompt_eval.history import history
    from retrieval_bench.prompt_eval.report import aligned, format_history

    if args.edits:
        names = [args.use_case] if args.use_case else store.use_cases()
        edits = [(n, v) for n in names for v in store.prompt_versions(n, args.prompt)]
        if args.json:
            print(json.dumps([
                {"use_case": n, "prompt": v.prompt.name, "version": v.prompt.version,
                 "created_at": v.created_at, "deleted": v.deleted, "model": v.prompt.model,
                 "system": v.prompt.system, "user": v.prompt.user,
                 "parameters": dict(v.prompt.parameters)} for n, v in edits
            ]))  # fmt: skip
            return EXIT_OK
        rows = [
            [v.created_at[:19], n, v.prompt.name, str(v.prompt.version),
             "deleted" if v.deleted else _preview(v.prompt.user, 60)]
            for n, v in edits
        ]  # fmt: skip
        print(aligned(["edited at (UTC)", "use case", "prompt", "v", "user prompt"], rows, 5))
        return EXIT_OK
    entries = history(store, args.use_case, args.prompt)
    if args.json:
        print(json.dumps([{**vars(e), "change": e.change if e.change == e.change else None,
                           "p_value": e.p_value if e.p_value == e.p_value else None}
                          for e in entries]))  # fmt: skip
        return EXIT_OK
    if not entries:
        print("no prompt-evaluation runs stored yet (run: rbench prompts run USE_CASE)")
        return EXIT_OK
    print(format_history(entries))
    return EXIT_OK


def _import(args: argparse.Namespace, ws: Workspace, store: Any) -> int:
    from retrieval_bench.prompt_eval.io import import_file
    from retrieval_bench.prompt_eval.usecase import get_use_case

    uc = get_use_case(args.use_case)
    summary = import_file(store, uc, args.file, args.kind, fmt=args.format, replace=args.replace)
    print(f"{uc.name}: imported {args.kind} from {args.file}: {summary}")
    return EXIT_OK


def _export(args: argparse.Namespace, ws: Workspace, store: Any) -> int:
    from retrieval_bench.out_file import out_file
    from retrieval_bench.prompt_eval.io import ensure_examples, export_prompts, export_rows
    from retrieval_bench.prompt_eval.usecase import get_use_case

    out = None
    if args.out:  # the rule of every output file: checked before anything is read
        source = args.use_case.rpartition(":")[0]  # file.py of file.py:Class
        inputs = [(ws.db_path, "the workspace database, which holds the rows and prompts"),
                  (source if source.endswith(".py") else None, "the use case's file")]  # fmt: skip
        out = out_file(args.out, force=args.force, inputs=inputs)
    uc = get_use_case(args.use_case)
    ensure_examples(store, uc)
    fmt = args.format or (Path(args.out).suffix.lstrip(".") if args.out else "json") or "json"
    if args.kind == "rows":
        text = export_rows(uc, store.rows(uc.name), fmt)
    else:
        text = export_prompts(uc, store.prompts(uc.name), fmt, store.baseline(uc.name))
    if out is not None:
        out.write_text(text)
        print(f"{uc.name}: wrote {args.kind} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK

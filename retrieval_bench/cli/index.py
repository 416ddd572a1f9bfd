"""``rbench index REPO`` and ``rbench query REPO QUESTION``: build or update a
repository's LanceDB index, search it with one retriever."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import EXIT_OK, reporter, workspace


def add_walk_flags(parser: argparse.ArgumentParser) -> None:
    """``--ignore`` and ``--include``: a dataset's ``ignore:`` and ``include:`` lists for
    the files indexed or searched (docs/datasets.md#ignore-rules-and-skipped-files)."""
    parser.add_argument(
        "--ignore", action="append", default=[], metavar="PATTERN",
        help="drop the files this gitignore-style pattern matches, on top of the "
        "repository's .gitignore files (repeatable; as a dataset's ignore:)",
    )  # fmt: skip
    parser.add_argument(
        "--include", action="append", default=[], metavar="GLOB",
        help="keep only the files one of these gitignore-style globs matches, "
        "e.g. --include '*.py' (repeatable; as a dataset's include:)",
    )  # fmt: skip


def _chunker_from_args(args: argparse.Namespace) -> Any:
    from retrieval_bench.contracts import registry

    params: dict[str, Any] = {}
    if args.budget:
        params["budget" if args.chunker == "ast" else "max_tokens"] = args.budget
    return registry.create("chunkers", args.chunker, **params)


def cmd_index(args: argparse.Namespace) -> int:
    from retrieval_bench import api

    with reporter(enabled=not args.json) as progress:
        stats = api.index(
            args.repo,
            _chunker_from_args(args),
            workspace(args),
            Path(args.index_uri) if args.index_uri else None,
            rebuild=args.rebuild,
            progress=progress,
            ignore=args.ignore,
            include=args.include,
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

    with reporter() as progress:  # the index build before a dense search (stderr)
        hits = api.query(
            args.repo,
            args.question,
            args.retriever,
            args.n,
            _chunker_from_args(args),
            workspace(args),
            Path(args.index_uri) if args.index_uri else None,
            progress=progress,
            ignore=args.ignore,
            include=args.include,
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

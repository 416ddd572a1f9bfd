"""``rbench dataset inspect|import-swebench|mine``: labelled questions.

``inspect`` counts examples and splits and reports invalid rows (exit 2 when
there are some) and, with ``--snapshot``, gold files the snapshot lacks;
``import-swebench`` turns SWE-bench rows into questions (patch → modified
files); ``mine`` makes questions from git history (message → modified files).
Both write ``OUT`` by the rule of every output file
(:mod:`retrieval_bench.out_file`: never the input, an existing file only with
``--force``, never into a missing folder, atomically), and exit 2 when nothing
is valid (docs/datasets.md#swe-bench-import).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_bench.cli.common import EXIT_BAD_INPUT, EXIT_OK, workspace
from retrieval_bench.errors import ConfigError, DatasetError
from retrieval_bench.out_file import out_file

if TYPE_CHECKING:
    from retrieval_bench.datasets.jsonl import RowError


def cmd_dataset(args: argparse.Namespace) -> int:
    from retrieval_bench.datasets import jsonl
    from retrieval_bench.harness.run.report import count_noun

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

            snap = open_snapshot(args.snapshot, workspace(args).snapshots_dir)
            paths = {f.path for f in iter_source_files(snap.root)}
            for qid, missing in jsonl.check_gold(loaded.examples, paths).items():
                print(f"  missing gold: {qid}: {', '.join(missing)}")
        return EXIT_BAD_INPUT if loaded.errors else EXIT_OK
    if args.dataset_cmd == "import-swebench":
        from retrieval_bench.datasets import swebench

        out = out_file(args.out, force=args.force, inputs=[(args.file, "the SWE-bench file")],
                       flag="")  # fmt: skip
        repos = dict(_repo_arg(r) for r in args.repo or [])
        source = swebench.git_base_source(repos) if repos else None
        result = swebench.load_swebench(Path(args.file), base_source=source)
        if not result.examples:  # one line, not one per row: the cause is likely shared
            raise DatasetError(_nothing_valid(args.file, result.errors))
        for err in result.errors:
            print(f"  error: {err}", file=sys.stderr)
        out.write_lines(jsonl.example_lines(result.examples))
        print(f"wrote {count_noun(len(result.examples), 'example')} to {args.out}")
        if repos:
            with_fn = sum(1 for e in result.examples if e.gold_functions)
            by_locagent = sum(1 for e in result.examples if e.gold_functions_locagent)
            print(f"{with_fn} with gold functions, {by_locagent} by LocAgent's rules "
                  f"(from --repo {', '.join(sorted(repos))})")  # fmt: skip
        return EXIT_OK
    if args.dataset_cmd == "mine":
        from retrieval_bench.datasets import gitmine

        out = out_file(args.out, force=args.force, inputs=[(args.repo, "the git repository")],
                       flag="")  # fmt: skip
        mined = gitmine.mine_examples(Path(args.repo), args.range, last=args.last)
        dropped = ", ".join(f"{k}={v}" for k, v in sorted(mined.dropped.items()))
        if not mined.examples:
            raise DatasetError(
                f"no questions mined from {args.repo} (dropped: {dropped or 'none'}); "
                f"{args.out} not written"
            )
        out.write_lines(jsonl.example_lines(mined.examples))
        wrote = count_noun(len(mined.examples), "example")
        print(f"wrote {wrote} to {args.out} (dropped: {dropped or 'none'})")
        return EXIT_OK
    raise ConfigError(f"unknown dataset command {args.dataset_cmd!r}")


def _nothing_valid(source: str, errors: Sequence[RowError]) -> str:
    if not errors:
        return f"{source} has no rows; nothing written"
    return (
        f"{source} has no valid rows: all {len(errors)} are invalid (first: {errors[0]}); "
        "nothing written"
    )


def _repo_arg(text: str) -> tuple[str, str]:
    """``owner/name=PATH`` of ``--repo``."""
    repo, sep, path = text.partition("=")
    if not sep or "/" not in repo or not path:
        raise DatasetError(f"--repo {text!r}: give owner/name=PATH (a local clone or mirror)")
    return repo.strip(), path.strip()

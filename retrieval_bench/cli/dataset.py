"""``rbench dataset inspect|import-swebench|mine``: labelled questions.

``inspect`` counts examples and splits and reports invalid rows (exit 2 when
there are some) and, with ``--snapshot``, gold files the snapshot lacks;
``import-swebench`` turns SWE-bench rows into questions (patch → modified
files); ``mine`` makes questions from git history (message → modified files).
Both refuse an output that would lose data (the input itself, or an existing
file without ``--force``), exit 2 when nothing is valid, and write atomically
(docs/datasets.md#swe-bench-import).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_bench.cli.common import EXIT_BAD_INPUT, EXIT_OK, workspace
from retrieval_bench.errors import ConfigError, DatasetError

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

        check_output(Path(args.out), Path(args.file), args.force)
        repos = dict(_repo_arg(r) for r in args.repo or [])
        source = swebench.git_base_source(repos) if repos else None
        result = swebench.load_swebench(Path(args.file), base_source=source)
        if not result.examples:  # one line, not one per row: the cause is likely shared
            raise DatasetError(_nothing_valid(args.file, result.errors))
        for err in result.errors:
            print(f"  error: {err}", file=sys.stderr)
        jsonl.write_examples(Path(args.out), result.examples)
        print(f"wrote {count_noun(len(result.examples), 'example')} to {args.out}")
        if repos:
            with_fn = sum(1 for e in result.examples if e.gold_functions)
            print(f"{with_fn} with gold functions (from --repo {', '.join(sorted(repos))})")
        return EXIT_OK
    if args.dataset_cmd == "mine":
        from retrieval_bench.datasets import gitmine

        check_output(Path(args.out), Path(args.repo), args.force)
        mined = gitmine.mine_examples(Path(args.repo), args.range, last=args.last)
        dropped = ", ".join(f"{k}={v}" for k, v in sorted(mined.dropped.items()))
        if not mined.examples:
            raise DatasetError(
                f"no questions mined from {args.repo} (dropped: {dropped or 'none'}); "
                f"{args.out} not written"
            )
        jsonl.write_examples(Path(args.out), mined.examples)
        wrote = count_noun(len(mined.examples), "example")
        print(f"wrote {wrote} to {args.out} (dropped: {dropped or 'none'})")
        return EXIT_OK
    raise ConfigError(f"unknown dataset command {args.dataset_cmd!r}")


def check_output(out: Path, source: Path, force: bool) -> None:
    """Refuse, before any work, an output that would destroy data: the input itself
    (even with ``--force``), a folder, or an existing file without ``--force``.
    The file is then written atomically (:func:`~retrieval_bench.datasets.jsonl.write_examples`)."""
    if out.is_dir():
        raise ConfigError(f"{out} is a folder: give the questions file to write")
    if out.exists() and source.exists() and os.path.samefile(out, source):
        raise ConfigError(
            f"{out} is the input {source}: refusing to write over it (even with --force); "
            "give another output file"
        )
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists: pass --force to replace it (nothing written)")


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

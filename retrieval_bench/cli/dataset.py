"""``rbench dataset inspect|import-swebench|mine``: labelled questions.

``inspect`` counts examples and splits and reports invalid rows (exit 2 when
there are some) and, with ``--snapshot``, gold files the snapshot lacks;
``import-swebench`` turns SWE-bench rows into questions (patch → modified
files); ``mine`` makes questions from git history (message → modified files).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrieval_bench.cli.common import EXIT_BAD_INPUT, EXIT_OK, workspace
from retrieval_bench.errors import ConfigError


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

            snap = open_snapshot(args.snapshot, workspace(args).snapshots_dir)
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

"""rbench: measure and tune retrieval over codebases, stage by stage.

The command line (``rbench = retrieval_bench.cli:main``): the parser is
:mod:`~retrieval_bench.cli.parser`, each command area its own module (``run``,
``index`` and ``query``, ``runs`` and ``show``, ``compare``, ``eval``,
``prompts``, ``llm``, ``dataset``, ``serve``), shared helpers in
:mod:`~retrieval_bench.cli.common`. Library code never imports this package.

Exit codes: 0 success; 1 a run or command failed; 2 bad usage, config or
input (the one-line message says which input and what to do).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from retrieval_bench.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from retrieval_bench.cli.parser import build_parser
from retrieval_bench.errors import ConfigError, DatasetError, RBenchError, SnapshotError
from retrieval_bench.store.db import CorruptDBError, RunInProgressError, UnknownRunError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_OK", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line), run the command, return its exit code."""
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

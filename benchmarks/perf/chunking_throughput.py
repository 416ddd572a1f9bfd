"""AST chunking throughput against the raw tree-sitter parse of the same files.

    python benchmarks/perf/chunking_throughput.py [PATH] [--budget 512] [--repeat 5]

Measures, in one process and on the same files (those with a tree-sitter
grammar, docs/stages.md#ast), the best of ``--repeat`` passes of:

* ``parse``: tree-sitter parsing only — the floor any AST chunker pays;
* ``tokenize``: the per-file token count the chunker needs (tokenizer only);
* ``chunk``: the whole ``ast`` chunker (tokenize + parse + walk + collapse).

It prints files/s and MB/s for each and the ratio chunking time / parse time,
and writes ``benchmarks/perf/results/chunking.json`` with the versions and
machine that produced it. Speed is reported as a ratio to a baseline measured
in the same run, never asserted in tests (docs/architecture.md#testing-conventions).

PATH defaults to ``fixtures/repos`` when present, else the ``retrieval_bench``
package itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from retrieval_bench import registry  # noqa: E402
from retrieval_bench.chunking.languages import spec_for_path  # noqa: E402
from retrieval_bench.chunking.text import LineText  # noqa: E402
from retrieval_bench.chunking.tokenizer import DEFAULT_TOKENIZER, get_tokenizer  # noqa: E402
from retrieval_bench.files import SourceFile, iter_source_files  # noqa: E402

RESULT = REPO / "benchmarks" / "perf" / "results" / "chunking.json"


def default_path() -> Path:
    fixtures = REPO / "fixtures" / "repos"
    return fixtures if fixtures.is_dir() else REPO / "retrieval_bench"


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Fastest wall time of ``repeat`` runs of ``fn`` (least disturbed by noise)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("tree-sitter", "tokenizers", "retrieval-bench"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=None)
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--tokenizer", default=DEFAULT_TOKENIZER)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    root = (args.path or default_path()).resolve()

    files: list[SourceFile] = [f for f in iter_source_files(root) if spec_for_path(f.path)]
    if not files:
        print(f"no files with a tree-sitter grammar under {root}", file=sys.stderr)
        return 1
    n_bytes = sum(len(f.text.encode("utf-8")) for f in files)
    chunker = registry.create("chunkers", "ast", budget=args.budget, tokenizer=args.tokenizer)
    tokenizer = get_tokenizer(args.tokenizer)
    parsers = {}
    jobs = []
    for f in files:
        spec = spec_for_path(f.path)
        assert spec is not None
        if spec.name not in parsers:
            parsers[spec.name] = spec.parser()
        jobs.append((parsers[spec.name], f.text.encode("utf-8")))

    def parse_all() -> None:
        for p, data in jobs:
            p.parse(data)

    def tokenize_all() -> None:
        for f in files:
            LineText(f.text, tokenizer)

    n_chunks = 0

    def chunk_all() -> None:
        nonlocal n_chunks
        n_chunks = sum(len(chunker.chunk_file(f)) for f in files)

    chunk_all()  # warm-up: grammars, tokenizer, caches
    parse_s = best_of(args.repeat, parse_all)
    tokenize_s = best_of(args.repeat, tokenize_all)
    chunk_s = best_of(args.repeat, chunk_all)

    def rates(seconds: float) -> dict[str, float]:
        return {
            "seconds": round(seconds, 6),
            "files_per_s": round(len(files) / seconds, 1),
            "mb_per_s": round(n_bytes / seconds / 1e6, 3),
        }

    result = {
        "benchmark": "chunking_throughput",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "path": str(root),
        "files": len(files),
        "bytes": n_bytes,
        "chunks": n_chunks,
        "chunker": {"name": chunker.name, **chunker.config()},
        "repeat": args.repeat,
        "parse": rates(parse_s),
        "tokenize": rates(tokenize_s),
        "chunk": rates(chunk_s),
        "ratio_chunk_to_parse": round(chunk_s / parse_s, 2),
        "ratio_tokenize_to_parse": round(tokenize_s / parse_s, 2),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
        },
        "versions": versions(),
    }
    print(f"{len(files)} files, {n_bytes / 1e6:.3f} MB, {n_chunks} chunks under {root}")
    for stage in ("parse", "tokenize", "chunk"):
        r = result[stage]
        assert isinstance(r, dict)
        print(
            f"  {stage:9s} {r['seconds'] * 1000:9.1f} ms  "
            f"{r['files_per_s']:9.1f} files/s  {r['mb_per_s']:7.3f} MB/s"
        )
    print(f"  chunking time / parse time = {result['ratio_chunk_to_parse']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a lexical run pays for libraries it does not use: a fresh ``rbench run``
(bm25 + exact + rrf on the bundled ``shopapi`` fixture) against the same command
with LanceDB, pyarrow and scipy.stats/special imported first — what every such run
paid before those imports were made lazy (docs/architecture.md#imports).

    python benchmarks/perf/lexical_run_startup.py [--repeat 5]

Both commands run as fresh processes, alternately, ``--repeat`` times each; the
script reports the best and median wall seconds of each, the ratio lazy/eager of
the medians, and writes ``benchmarks/perf/results/lexical_run_startup.json``
with the machine's load. Nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "benchmarks" / "perf" / "results" / "lexical_run_startup.json"
SHOPAPI = REPO / "fixtures" / "repos" / "shopapi"
EAGER = "import lancedb, pyarrow, scipy.stats, scipy.special\n"
RUN = "import sys\nfrom retrieval_bench.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def timed(script: str, argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, *argv], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    config = {
        "name": "lexical",
        "datasets": [{"name": "shopapi", "questions": str(SHOPAPI / "questions.jsonl"),
                      "snapshot": str(SHOPAPI)}],
        "retrievers": [{"name": "bm25"}, {"name": "exact"}],
        "fusions": [{"name": "rrf"}],
    }  # fmt: skip
    lazy: list[float] = []
    eager: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lexical.json"
        path.write_text(json.dumps(config))
        argv = ["--workspace", str(Path(tmp) / "ws"), "run", str(path)]
        timed(RUN, argv)  # warm the chunk cache and the OS file cache once
        for _ in range(args.repeat):
            lazy.append(timed(RUN, argv))
            eager.append(timed(EAGER + RUN, argv))
    result = {
        "repeat": args.repeat,
        "lazy_seconds": {"best": min(lazy), "median": statistics.median(lazy)},
        "eager_seconds": {"best": min(eager), "median": statistics.median(eager)},
        "ratio_lazy_vs_eager_median": statistics.median(lazy) / statistics.median(eager),
        "saved_seconds_median": statistics.median(eager) - statistics.median(lazy),
    }
    write_result(RESULT, result)
    print(
        f"rbench run (bm25+exact+rrf, shopapi), median of {args.repeat}: "
        f"{statistics.median(lazy):.2f} s as shipped vs {statistics.median(eager):.2f} s with "
        f"LanceDB/pyarrow/scipy.stats imported first ({result['ratio_lazy_vs_eager_median']:.2f}x; "
        f"{result['saved_seconds_median']:.2f} s saved per process)"
    )


if __name__ == "__main__":
    main()

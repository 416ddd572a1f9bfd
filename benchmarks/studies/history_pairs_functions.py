"""Gold functions of the learned rankers' training questions
(docs/metrics.md#function-and-module-level), so the held-back repository split is
scored at module and function level too.

Each question of ``benchmarks/data/history-pairs/<repo>.jsonl`` was asked at the
parent of its commit; its gold functions are that commit's change to its gold files
on the parent's files (``rbench dataset mine``'s rule, ``gitmine.commit_functions``),
by this project's rules and by LocAgent's (docs/metrics.md#conventions). Written as
``{id, gold_functions, gold_functions_locagent}`` rows to
``benchmarks/data/history-pairs/<repo>.functions.jsonl``, which a dataset's
``gold_functions:`` key merges by id.

Usage::

    python benchmarks/studies/history_pairs_functions.py [--data-root ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from retrieval_bench.datasets.gitmine import commit_functions

PAIRS = Path(__file__).resolve().parents[1] / "data" / "history-pairs"
DEFAULT_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"
DATA_ROOT = Path(os.environ.get("RBENCH_DATA_ROOT", DEFAULT_ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=DATA_ROOT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for pairs in sorted(PAIRS.glob("*.jsonl")):
            if pairs.name.endswith(".functions.jsonl"):
                continue
            name = pairs.stem
            repo = Path(tmp) / f"{name}.git"
            bundle = args.data_root / "repos" / f"{name}.bundle"
            subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)], check=True)
            rows = [json.loads(x) for x in pairs.read_text().splitlines() if x.strip()]
            out = []
            for row in rows:
                parents = subprocess.run(
                    ["git", "-C", str(repo), "rev-parse", f"{row['commit']}^1"],
                    capture_output=True, text=True, check=True,
                ).stdout.split()  # fmt: skip
                own, locagent = commit_functions(repo, row["commit"], parents, row["gold_files"])
                out.append({"id": row["id"], "gold_functions": list(own),
                            "gold_functions_locagent": list(locagent)})  # fmt: skip
            target = PAIRS / f"{name}.functions.jsonl"
            target.write_text("".join(json.dumps(r) + "\n" for r in out))
            with_gold = sum(1 for r in out if r["gold_functions"])
            by_locagent = sum(1 for r in out if r["gold_functions_locagent"])
            differ = sum(1 for r in out if r["gold_functions"] != r["gold_functions_locagent"])
            print(f"{name}: {with_gold} of {len(out)} questions have gold functions"
                  f" ({by_locagent} by LocAgent's rules; the sets differ on {differ})"
                  f" -> {target.name}")  # fmt: skip


if __name__ == "__main__":
    main()

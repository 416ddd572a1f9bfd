"""Where do changes land? Share of modified code files (and of changes) that are
tests, docs/examples/benchmarks, or source, in the newest pairs of the bundled
pytest, flask and requests histories (docs/stages.md#learning-to-rank).

The same mining as ``mine_history_pairs.py`` (pull-request merges as their
diff, bots, releases and large changes dropped), but test files and
docs/examples are kept as gold, to see the real mix. Usage::

    python benchmarks/studies/change_kinds.py [--repos ../shared/data/repos] [--last 400]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mine_history_pairs import AUX, SHARED, mirrors  # sibling module: the scripts run standalone

from retrieval_bench.datasets.gitmine import MineOptions, mine_examples
from retrieval_bench.datasets.swebench import is_test_path


def kind(path: str) -> str:
    return "test" if is_test_path(path) else "aux" if AUX.search(path) else "source"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=Path, default=SHARED / "repos")
    ap.add_argument("--last", type=int, default=400)
    args = ap.parse_args()
    options = MineOptions(skip_merges=False, skip_tests=False, max_files=20)
    print(f"{'repo':10}{'changes':>8}{'files':>7}  share of files: test aux source"
          "  | changes touching: test aux source")  # fmt: skip
    for name, mirror in mirrors(args.repos):
        changes = mine_examples(mirror, options=options).examples[-args.last :]
        files = [kind(g) for e in changes for g in e.gold_files]
        share = {k: files.count(k) / len(files) for k in ("test", "aux", "source")}
        touch = {
            k: sum(any(kind(g) == k for g in e.gold_files) for e in changes) / len(changes)
            for k in ("test", "aux", "source")
        }
        line = f"{name:10}{len(changes):8}{len(files):7}  "
        line += f"{share['test']:20.2f}{share['aux']:5.2f}{share['source']:7.2f}"
        line += f"  | {touch['test']:19.2f}{touch['aux']:5.2f}{touch['source']:7.2f}"
        print(line)


if __name__ == "__main__":
    main()

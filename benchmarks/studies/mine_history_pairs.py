"""Mine (commit message → modified source files) pairs from the bundled git histories:
the training questions of the ``ltr`` fusion (docs/stages.md#learning-to-rank).

For each repository bundle (pytest, flask, requests) this mines the first-parent
history with :func:`retrieval_bench.datasets.gitmine.mine_examples` — a
pull-request merge counts as its diff against the first parent, titled by the
pull request (most of these projects land changes that way) — (bots, reverts,
releases, short or repeated titles and large changes dropped; test files
are never gold), then

* keeps as gold only files outside ``docs/``, ``doc/``, ``examples/`` and
  ``benchmarks/`` — the labelling rule of the bundled devsets and of SWE-bench
  (the fix's source files); a pair left with no gold file is dropped;
* drops every commit that is a question of an evaluation set given with
  ``--exclude`` (by default the pytest, flask and requests devsets, both splits),
  so no evaluated question is ever a training question;
* keeps the newest ``--last`` pairs per repository.

Every row gets ``split: train`` and its ``commit``; the configs ask each
question at the parent of its commit. Usage::

    python benchmarks/studies/mine_history_pairs.py --out benchmarks/data/history-pairs \\
        [--repos ../shared/data/repos] [--last 400]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from retrieval_bench.datasets import jsonl
from retrieval_bench.datasets.gitmine import MineOptions, mine_examples

REPOS = ("pytest", "flask", "requests")
AUX = re.compile(r"(^|/)(docs?|examples?|benchmarks?)/")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def excluded_commits(paths: list[Path]) -> set[str]:
    """Commits of the evaluation questions (full shas)."""
    out = set()
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row.get("commit"):
                    out.add(row["commit"])
    return out


def mirrors(repos: Path) -> Iterator[tuple[str, Path]]:
    """(name, bare clone) of each bundle of :data:`REPOS` in ``repos``, in a temp
    folder that lasts while the caller iterates."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in REPOS:
            mirror = Path(tmp) / f"{name}.git"
            bundle = str(repos / f"{name}.bundle")
            subprocess.run(["git", "clone", "-q", "--bare", bundle, str(mirror)], check=True)
            yield name, mirror


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repos", type=Path, default=SHARED / "repos")
    ap.add_argument("--last", type=int, default=400, help="newest pairs kept per repository")
    ap.add_argument(
        "--exclude", type=Path, nargs="*",
        default=[SHARED / "devsets" / f for f in
                 ("pytest-7.4.0.jsonl", "flask-2.3.2.jsonl", "requests-2.31.0.jsonl")],
    )  # fmt: skip
    args = ap.parse_args()
    skip = excluded_commits(args.exclude)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, mirror in mirrors(args.repos):
        mined = mine_examples(
            mirror, id_prefix=f"{name}-hist-", options=MineOptions(skip_merges=False)
        )
        kept = []
        for e in mined.examples:
            commit = str(e.meta.get("commit", ""))
            gold = tuple(g for g in e.gold_files if not AUX.search(g))
            if commit in skip or not gold:
                continue
            kept.append(replace(e, gold_files=gold, split="train"))
        kept = kept[-args.last :]
        jsonl.write_examples(args.out / f"{name}.jsonl", kept)
        print(f"{name}: {len(mined.examples)} mined, {len(kept)} kept")


if __name__ == "__main__":
    main()

"""Per-split stage tables of a stored run: choose on one split, report on the other.

``rbench run`` averages every stage over all evaluated questions. To choose
between variants on a dev split and report the choice on held-out questions
from a *single* run (every variant a stage of the same config, so the
snapshots are chunked once), this reads the run's per-query metrics
(``.rbench/results/<run-id>/query_metrics.jsonl``) and averages them per split:

* ``--hash-split F``: the split the dataset option ``hash_split: F`` gives
  (:func:`retrieval_bench.harness.pipeline.with_hash_split`: ``test`` when
  sha256(id) < F, else ``dev``), whatever split the row carries (the
  swebench-lite-dev rows all say ``dev``);
* otherwise the row's own ``split`` (pytest-history: dev 186 / test 46).

Columns: Acc@1/3/5/10, MRR, R@10 and the stage's seconds over the whole run
(index + search, all splits); ``--markdown`` prints a markdown table.

Usage::

    python benchmarks/studies/split_table.py RUN_ID [--hash-split 0.5] [--markdown]
        [--workspace .rbench] [--stages bm25,bm25-issue]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from retrieval_bench.datasets.jsonl import load_examples
from retrieval_bench.harness.pipeline import with_hash_split

COLUMNS = ("Acc@1", "Acc@3", "Acc@5", "Acc@10", "MRR", "R@10")


def splits_of(questions: Path, hash_split: float | None) -> dict[str, str]:
    """Query id → split (module doc)."""
    out = {}
    for e in load_examples(questions).examples:
        if hash_split is not None:
            e = with_hash_split(replace(e, split=None), hash_split)
        out[e.id] = e.split or "all"
    return out


def tables(run_dir: Path, hash_split: float | None) -> dict[str, dict[str, dict[str, float]]]:
    """split → stage → column → mean (plus ``n`` and ``seconds``)."""
    run = json.loads((run_dir / "run.json").read_text())
    questions = Path(run["run"]["config"]["datasets"][0]["questions"])
    split = splits_of(questions, hash_split)
    seconds = {s["stage"]: s["seconds"] for s in run["stages"]}
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    with open(run_dir / "query_metrics.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            for part in (split.get(r["query_id"], "all"), "all"):
                rows.setdefault(part, {}).setdefault(r["stage"], []).append(r["metrics"])
    out: dict[str, dict[str, dict[str, float]]] = {}
    for part, stages in rows.items():
        for stage, metrics in stages.items():
            row = {c: sum(m.get(c, 0.0) for m in metrics) / len(metrics) for c in COLUMNS}
            row["n"] = len(metrics)
            row["seconds"] = seconds.get(stage, float("nan"))
            out.setdefault(part, {})[stage] = row
    return out


def render(part: str, stages: dict[str, dict[str, float]], markdown: bool, only: list[str]) -> str:
    names = [s for s in (only or list(stages)) if s in stages]
    n = int(next(iter(stages.values()))["n"]) if stages else 0
    head = ["stage", *COLUMNS, "seconds"]
    lines = [f"split {part} ({n} queries)"]
    body = [
        [s, *(f"{stages[s][c]:.3f}" for c in COLUMNS), f"{stages[s]['seconds']:.1f}"] for s in names
    ]
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(r) + " |" for r in body]
    else:
        width = max(len(s) for s in [*names, "stage"])
        lines.append(f"{'stage':{width}}" + "".join(f"{c:>8}" for c in head[1:]))
        lines += [f"{r[0]:{width}}" + "".join(f"{v:>8}" for v in r[1:]) for r in body]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_id")
    parser.add_argument("--workspace", default=".rbench")
    parser.add_argument("--hash-split", type=float, default=None)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--stages", default="", help="comma-separated stage labels, in order")
    args = parser.parse_args()
    run_dir = Path(args.workspace) / "results" / args.run_id
    only = [s for s in args.stages.split(",") if s]
    for part, stages in sorted(tables(run_dir, args.hash_split).items()):
        print(render(part, stages, args.markdown, only))
        print()


if __name__ == "__main__":
    main()

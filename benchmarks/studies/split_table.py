"""Per-split stage tables of a stored run: choose on one split, report on the other.

``rbench run`` averages every stage over all evaluated questions. To choose
between variants on a dev split and report the choice on held-out questions
from a *single* run (every variant a stage of the same config, so the
snapshots are chunked once), this reads the run's per-query metrics
(``.rbench/results/<run-id>/query_metrics.jsonl``) and averages them per split:

* ``--hash-split F``: the split the dataset option ``hash_split: F`` gives
  (:func:`retrieval_bench.datasets.splits.with_hash_split`: ``test`` when
  sha256(id) < F, else ``dev``), whatever split the row carries (the
  swebench-lite-dev rows all say ``dev``);
* otherwise the row's own ``split`` (pytest-history: dev 186 / test 46).

Columns: Acc@1/3/5/10, MRR, R@10 and the stage's seconds over the whole run
(index + search, all splits); ``--markdown`` prints a markdown table.

Per split, as in ``rbench run``'s per-stage table
(:mod:`retrieval_bench.harness.compare.paired`): ``Δ<metric> vs <baseline>`` and ``p``
(every stage paired with the baseline stage per query on that split: two-sided
randomisation test, Holm-adjusted across the split's stages), and the fusion
guard (a fusion significantly worse than its best input on that split gets a
``!`` and a note). ``--baseline``/``--metric`` default to the run config's
``baseline:``, else the first retriever and the first of ``table_columns``
(else ``R@<table_k>``). So a choice made on dev is reported on test with both.

Usage::

    python benchmarks/studies/split_table.py RUN_ID [--hash-split 0.5] [--markdown]
        [--workspace .rbench] [--stages bm25,bm25-issue] [--baseline bm25 --metric Acc@5]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from retrieval_bench.datasets.splits import question_splits
from retrieval_bench.harness.compare.paired import decode, encode, fusion_inputs, paired_view
from retrieval_bench.harness.compare.paired import resolve_baseline as default_baseline
from retrieval_bench.harness.run.report import (
    paired_cells,
    paired_header,
    paired_notes,
    stage_label,
)

COLUMNS = ("Acc@1", "Acc@3", "Acc@5", "Acc@10", "MRR", "R@10")


def tables(
    run_dir: Path,
    hash_split: float | None,
    baseline: str | None = None,
    metric: str | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """split → stage → column → mean (plus ``n``, ``seconds`` and the split's paired
    entries, :func:`retrieval_bench.harness.compare.paired.encode`)."""
    run = json.loads((run_dir / "run.json").read_text())
    config = run["run"]["config"]
    questions = Path(config["datasets"][0]["questions"])
    split = question_splits(questions, hash_split)
    seconds = {s["stage"]: s["seconds"] for s in run["stages"]}
    rows: dict[str, dict[str, dict[str, dict[str, float]]]] = {}  # split → stage → query
    with open(run_dir / "query_metrics.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            for part in (split.get(r["query_id"], "all"), "all"):
                per_stage = rows.setdefault(part, {}).setdefault(r["stage"], {})
                per_stage[r["query_id"]] = r["metrics"]
    stage, chosen = default_baseline(config, baseline, metric)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for part, stages in rows.items():
        for name, per_query in stages.items():
            metrics = list(per_query.values())
            row = {c: sum(m.get(c, 0.0) for m in metrics) / len(metrics) for c in COLUMNS}
            row["n"] = len(metrics)
            row["seconds"] = seconds.get(name, float("nan"))
            out.setdefault(part, {})[name] = row
        view = paired_view(stages, list(stages), stage, chosen, fusion_inputs(config))
        for name, entries in (encode(view) if view is not None else {}).items():
            out[part][name].update(entries)
    return out


def render(part: str, stages: dict[str, dict[str, float]], markdown: bool, only: list[str]) -> str:
    names = [s for s in (only or list(stages)) if s in stages]
    n = int(next(iter(stages.values()))["n"]) if stages else 0
    view = decode({s: stages[s] for s in names})
    head = ["stage", *COLUMNS, "seconds", *paired_header(view)]
    lines = [f"split {part} ({n} queries)"]
    body = [
        [stage_label(view, s), *(f"{stages[s][c]:.3f}" for c in COLUMNS),
         f"{stages[s]['seconds']:.1f}", *paired_cells(view, s)]
        for s in names
    ]  # fmt: skip
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(r) + " |" for r in body]
    else:
        width = max(len(s) for s in [*(r[0] for r in body), "stage"])
        widths = [max(8, len(h) + 2) for h in head[1:]]  # the paired header is wider

        def line(cells: list[str]) -> str:
            rest = zip(cells[1:], widths, strict=True)
            return f"{cells[0]:{width}}" + "".join(f"{c:>{w}}" for c, w in rest)

        lines += [line(head), *map(line, body)]
    notes = paired_notes(view, names)
    if markdown and notes:  # a line right below a Markdown table would be read as a row
        return "\n\n".join(["\n".join(lines), *notes])
    return "\n".join([*lines, *notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_id")
    parser.add_argument("--workspace", default=".rbench")
    parser.add_argument("--hash-split", type=float, default=None)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--stages", default="", help="comma-separated stage labels, in order")
    parser.add_argument(
        "--baseline", default=None,
        help="stage every other is paired with (default: the config's, else the first retriever)",
    )  # fmt: skip
    parser.add_argument(
        "--metric", default=None,
        help="per-query metric of the paired columns and the fusion guard (e.g. Acc@5; "
        "default: the config's baseline metric, else the first table column, else R@table_k)",
    )  # fmt: skip
    args = parser.parse_args()
    run_dir = Path(args.workspace) / "results" / args.run_id
    only = [s for s in args.stages.split(",") if s]
    parts = tables(run_dir, args.hash_split, args.baseline, args.metric)
    for part, stages in sorted(parts.items()):
        print(render(part, stages, args.markdown, only))
        print()


if __name__ == "__main__":
    main()

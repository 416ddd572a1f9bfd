"""A benchmark written as Python pipelines instead of YAML (docs/configuration.md#python-pipelines).

Run from the repository root::

    python examples/builder_pipeline.py [WORKSPACE]

It measures bm25 and exact alone, their reciprocal rank fusion, and the code-graph
reranker over that fusion cut to its top 20, on the bundled ``shopapi`` fixture;
prints the stage graph, the config it compiles to (what ``rbench run`` would read
from a file) and the per-stage table of the stored run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import retrieval_bench as rb
from retrieval_bench.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
SHOPAPI = ROOT / "fixtures" / "repos" / "shopapi"


def experiment() -> rb.Experiment:
    bm25 = rb.retriever("bm25")
    exact = rb.retriever("exact", terms="identifiers")
    fused = (bm25 + exact) >> rb.fusion("rrf", k_rrf=60)
    graph = fused >> rb.reranker("code-graph", top_n=3) % 20
    dataset = {"name": "shopapi", "questions": str(SHOPAPI / "questions.jsonl"),
               "snapshot": str(SHOPAPI)}  # fmt: skip
    return rb.Experiment(
        [graph, bm25, exact], dataset, name="builder-example", baseline=bm25, metric="R@5",
        chunker={"name": "ast", "budget": 512}, metrics={"ks": [1, 5, 10], "budgets": [8000]},
    )  # fmt: skip


def main() -> None:
    exp = experiment()
    print(exp.pipelines[0])
    print(exp.config().stage_graph())
    print(exp.to_yaml())
    workspace = Workspace(Path(sys.argv[1])) if len(sys.argv) > 1 else None
    result = exp.run(workspace)
    for stage, row in result.tables["all"].items():
        print(f"{stage:12s} R@5 {row['R@5']:.3f}  MRR {row['MRR']:.3f}")


if __name__ == "__main__":
    main()

"""The Python pipeline builder: operators, printout, errors, and one benchmark in
YAML and in Python giving one fingerprint and identical results
(docs/configuration.md#python-pipelines)."""

from __future__ import annotations

import importlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

import retrieval_bench as rb
from retrieval_bench.config import load_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.workspace import Workspace

BM25 = rb.retriever("bm25")
EXACT = rb.retriever("exact", terms="identifiers")


def test_operators_build_the_graph_and_print_the_expression() -> None:
    pipe = (BM25 + EXACT) >> rb.fusion("rrf") >> rb.reranker("code-graph", top_n=3) % 10
    assert repr(pipe) == "(bm25 + exact(terms='identifiers')) >> rrf >> code-graph(top_n=3) % 10"
    graph = pipe.graph()
    assert [(n.kind, n.label, n.inputs, n.cutoff) for n in graph] == [
        ("retriever", "bm25", (), None),
        ("retriever", "exact", (), None),
        ("fusion", "rrf", ("bm25", "exact"), None),
        ("reranker", "code-graph", ("rrf",), 10),
    ]
    solo = (BM25 % 5) >> rb.fusion("rrf", id="one")
    assert repr(solo) == "bm25 % 5 >> one" and solo.graph().node("one").inputs == ("bm25",)


def test_operator_misuse_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="reranks one stage"):
        (BM25 + EXACT) >> rb.reranker("code-graph")
    with pytest.raises(ConfigError, match="takes rb.fusion"):
        BM25 >> BM25  # type: ignore[operator]
    with pytest.raises(ConfigError, match="integer k >= 1"):
        BM25 % 0
    with pytest.raises(ConfigError, match="two different stages are labelled 'bm25'"):
        (BM25 + rb.retriever("bm25", k1=1.2)).stages()
    # a fusion may read a reranker: the graph runs the reranker first
    ranked = BM25 >> rb.reranker("code-graph")
    assert (ranked >> rb.fusion("rrf")).graph().labels == ["bm25", "code-graph", "rrf"]


SHOPAPI = Path(__file__).resolve().parents[2] / "fixtures" / "repos" / "shopapi"
YAML = """\
name: same
datasets:
  - {name: shop, questions: shopapi/questions.jsonl, snapshot: shopapi}
retrievers:
  - {name: bm25}
  - {name: exact, terms: identifiers}
fusions:
  - {name: rrf, k_rrf: 30}
  - {name: rrf, id: bm25-only, inputs: [bm25], cutoff: 3}
rerankers:
  - {name: code-graph, top_n: 2, inputs: [rrf]}
table_k: 2
metrics: {ks: [1, 2], budgets: [1000]}
baseline: {stage: bm25, metric: R@2}
"""


def _experiment(base: Path) -> rb.Experiment:
    fused = (BM25 + EXACT) >> rb.fusion("rrf", k_rrf=30)
    only = BM25 >> rb.fusion("rrf", id="bm25-only") % 3
    graph = fused >> rb.reranker("code-graph", top_n=2)
    dataset = {"name": "shop", "questions": "shopapi/questions.jsonl", "snapshot": "shopapi"}
    return rb.Experiment(
        [fused, only, graph], dataset, name="same", baseline=BM25, metric="R@2", base_dir=base,
        table_k=2, metrics={"ks": [1, 2], "budgets": [1000]},
    )  # fmt: skip


def _scores(tables: dict[str, dict[str, dict[str, float]]]) -> dict[str, object]:
    """The tables without the stages' own seconds (the only values that differ by run)."""
    return {
        sub: {st: {m: v for m, v in row.items() if m != "seconds"} for st, row in t.items()}
        for sub, t in tables.items()
    }


def test_yaml_and_builder_are_one_benchmark(tmp_path: Path) -> None:
    repo = tmp_path
    shutil.copytree(SHOPAPI, repo / "shopapi")
    (repo / "same.yaml").write_text(YAML)
    from_yaml = load_config(repo / "same.yaml")
    exp = _experiment(repo)
    assert exp.config().fingerprint() == from_yaml.fingerprint()
    assert exp.config().results_dump() == from_yaml.results_dump()
    a = run_benchmark(from_yaml, Workspace(repo / "ws-yaml"))
    b = exp.run(Workspace(repo / "ws-builder"))
    assert _scores(a.tables) == _scores(b.tables)
    for name in sorted(p.name for p in (a.out_dir / "runs").rglob("*") if p.is_file()):
        (fa,) = (a.out_dir / "runs").rglob(name)
        (fb,) = (b.out_dir / "runs").rglob(name)
        assert fa.read_bytes() == fb.read_bytes(), name
    per_query = {
        stage: Counter(line.split()[0] for line in path.read_text().splitlines())
        for stage in ("bm25", "bm25-only")
        for path in (b.out_dir / "runs").rglob(f"{stage}.trec")
    }
    assert max(per_query["bm25-only"].values()) == 3 < max(per_query["bm25"].values())  # % 3


def test_public_surface_is_lazy_and_complete() -> None:
    names = set(rb.__all__) - {"__version__"}
    assert names == set(rb._WHERE)
    for name in names:
        module = importlib.import_module(rb._WHERE[name])
        assert getattr(rb, name) is getattr(module, name)
    assert "index" not in rb.__all__  # the name of a subpackage
    with pytest.raises(AttributeError):
        _ = rb.nothing_here

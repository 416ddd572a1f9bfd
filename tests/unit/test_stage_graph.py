"""The stage graph: declared inputs, defaults, errors, node keys and its printout
(docs/architecture.md#the-stage-graph)."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_bench.config import parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.specs import StageSpec
from retrieval_bench.stage_graph import compile_stages


def specs(*entries: dict[str, Any]) -> list[StageSpec]:
    return [StageSpec(**e) for e in entries]


R = specs({"name": "bm25"}, {"name": "exact"}, {"name": "dense"})


def test_defaults_fusions_read_every_retriever_rerankers_the_last_fusion() -> None:
    graph = compile_stages(R, specs({"name": "rrf"}, {"name": "normsum"}), specs({"name": "ce"}))
    assert [(n.kind, n.label, n.inputs) for n in graph] == [
        ("retriever", "bm25", ()),
        ("retriever", "exact", ()),
        ("retriever", "dense", ()),
        ("fusion", "rrf", ("bm25", "exact", "dense")),
        ("fusion", "normsum", ("bm25", "exact", "dense")),
        ("reranker", "ce", ("normsum",)),
    ]
    # no fusion: a reranker reads the last retriever
    assert compile_stages(R, (), specs({"name": "ce"})).node("ce").inputs == ("dense",)


def test_declared_inputs_in_their_order_and_the_older_reranker_key() -> None:
    graph = compile_stages(
        R,
        specs({"name": "rrf", "inputs": ["exact", "bm25"]},
              {"name": "rrf", "id": "rrf2", "inputs": ["rrf", "dense"], "level": "file"}),
        specs({"name": "ce", "input": "rrf"}, {"name": "ce", "id": "ce2", "inputs": ["ce"]}),
    )  # fmt: skip
    assert graph.node("rrf").inputs == ("exact", "bm25")
    assert graph.node("rrf2").inputs == ("rrf", "dense") and graph.node("rrf2").level == "file"
    assert graph.node("ce").inputs == ("rrf",) and graph.node("ce2").inputs == ("ce",)
    assert repr(graph).splitlines()[4] == "  fusion rrf (rrf) <- exact + bm25"


@pytest.mark.parametrize(
    ("fusions", "rerankers", "message"),
    [
        ([{"name": "rrf", "inputs": ["bm2"]}], [], "input 'bm2' is not another stage"),
        ([{"name": "rrf", "inputs": ["rrf"]}], [], "input 'rrf' is not another stage"),
        ([{"name": "rrf", "inputs": ["ce"]}], [{"name": "ce", "inputs": ["rrf"]}],
         "cycle: rrf -> ce"),
        ([{"name": "rrf", "inputs": []}], [], "inputs is empty"),
        ([{"name": "rrf", "inputs": ["bm25", "bm25"]}], [], "name a stage twice"),
        ([{"name": "rrf", "inputs": "bm25", "input": "bm25"}], [], "not both"),
        ([{"name": "rrf", "inputs": [3]}], [], "must be a list of stage labels"),
        ([{"name": "rrf", "level": "chunk"}], [], "level 'chunk' is not one of"),
        ([{"name": "rrf"}], [{"name": "ce", "inputs": ["rrf", "bm25"]}], "exactly one stage"),
        ([{"name": "rrf"}], [{"name": "ce", "level": "file"}], "fusions only"),
    ],
)  # fmt: skip
def test_inputs_that_cannot_be_met_are_config_errors(
    fusions: list[dict[str, Any]], rerankers: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        compile_stages(R, specs(*fusions), specs(*rerankers))


def test_a_fusion_may_read_a_later_listed_stage_and_runs_after_it() -> None:
    """An ``ltr`` fusion reading the code-graph reranker's run: the graph puts the
    reranker (and what it reads) first."""
    graph = compile_stages(
        R,
        specs({"name": "rrf"}, {"name": "ltr", "inputs": ["bm25", "graph"]}),
        specs({"name": "code-graph", "id": "graph", "inputs": ["rrf"]}),
    )
    assert graph.labels == ["bm25", "exact", "dense", "rrf", "graph", "ltr"]
    assert graph.node("ltr").inputs == ("bm25", "graph")


def test_a_retriever_takes_no_inputs() -> None:
    with pytest.raises(ConfigError, match="reads the corpus"):
        compile_stages(specs({"name": "bm25", "inputs": ["x"]}))


def test_node_keys_change_with_anything_upstream() -> None:
    base = compile_stages(R, specs({"name": "rrf", "inputs": ["bm25", "exact"]}))
    same = compile_stages(
        [*R, StageSpec(name="splade")], specs({"name": "rrf", "inputs": ["bm25", "exact"]})
    )
    other = compile_stages(
        specs({"name": "bm25", "k1": 1.2}, {"name": "exact"}, {"name": "dense"}),
        specs({"name": "rrf", "inputs": ["bm25", "exact"]}),
    )
    k_base, k_same, k_other = (g.keys(50) for g in (base, same, other))
    assert k_base["rrf"] == k_same["rrf"]  # a retriever it does not read changes nothing
    assert k_base["exact"] == k_other["exact"] and k_base["rrf"] != k_other["rrf"]
    assert base.keys(50)["rrf"] != base.keys(20)["rrf"]


def test_config_loading_names_the_bad_input() -> None:
    data = {
        "name": "x",
        "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "."}],
        "retrievers": [{"name": "bm25"}],
        "rerankers": [{"name": "code-graph", "input": "rrf"}],
    }
    with pytest.raises(
        ConfigError, match="input 'rrf' is not another stage of this config; choose"
    ):
        parse_config(data, "cfg.yaml")
    data["rerankers"] = [{"name": "code-graph", "inputs": ["bm25"]}]
    assert parse_config(data, "cfg.yaml").stage_graph().node("code-graph").inputs == ("bm25",)

"""A config compiled once into a typed, frozen Plan; command-line overrides go in
before the config is validated (docs/architecture.md#the-plan)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_bench.config import parse_config
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.plan import Overrides, compile_plan, load_plan

CONFIG: dict[str, Any] = {
    "name": "t",
    "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "repo"}],
    "retrievers": [{"name": "bm25", "k1": 1.2}, {"name": "bm25-files", "id": "files"}],
    "fusions": [{"name": "rrf", "k_rrf": 10, "cutoff": 20}],
    "rerankers": [{"name": "code-graph", "id": "graph", "inputs": ["files"]}],
}


def _write(tmp_path: Path, data: dict[str, Any] | None = None) -> Path:
    (tmp_path / "q.jsonl").write_text('{"id": "a", "query": "x", "gold_files": ["a.py"]}\n')
    (tmp_path / "repo").mkdir(exist_ok=True)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data or CONFIG))
    return path


def test_every_node_carries_its_typed_parameters_with_defaults_filled() -> None:
    plan = compile_plan(parse_config(CONFIG, "c.yaml", Path("/tmp")))
    assert plan.graph.labels == ["bm25", "files", "rrf", "graph"]
    bm25 = plan.graph.node("bm25").params
    assert isinstance(bm25, StageParams) and bm25.k1 == 1.2 and bm25.b == 0.75  # type: ignore[attr-defined]
    assert plan.params["rrf"].k_rrf == 10  # type: ignore[attr-defined]
    assert plan.graph.node("rrf").cutoff == 20  # a graph key, not a parameter
    assert "cutoff" not in type(plan.params["rrf"]).model_fields
    assert plan.chunker.budget == 512  # type: ignore[attr-defined]


def test_a_bad_parameter_names_the_entry_and_the_key() -> None:
    bad = {**CONFIG, "fusions": [{"name": "rrf", "krrf": 60}]}
    with pytest.raises(ConfigError, match=r"^fusions\.0\.krrf: unknown parameter 'krrf' of fusion"):
        compile_plan(parse_config(bad, "c.yaml", Path("/tmp")))
    bad = {
        **CONFIG,
        "retrievers": [{"name": "bm25", "k1": "high"}, {"name": "bm25", "id": "files"}],
    }
    with pytest.raises(ConfigError, match=r"^retrievers\.0\.k1: Input should be a valid number"):
        compile_plan(parse_config(bad, "c.yaml", Path("/tmp")))


def test_the_plan_is_frozen_and_keeps_its_own_copy_of_the_config() -> None:
    cfg = parse_config(CONFIG, "c.yaml", Path("/tmp"))
    plan = compile_plan(cfg)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.graph = plan.graph  # type: ignore[misc]
    with pytest.raises(Exception, match="frozen"):
        plan.params["bm25"].k1 = 9.0  # type: ignore[attr-defined]
    cfg.candidates = 7
    assert plan.config.candidates == 50
    assert compile_plan(plan) is plan
    again = pickle.loads(pickle.dumps(plan))  # a worker process gets the same plan
    assert again.params == plan.params and again.graph.labels == plan.graph.labels


def test_overrides_go_in_before_the_config_is_checked(tmp_path: Path) -> None:
    path = _write(tmp_path)
    plan = load_plan(path, Overrides(table_k=7, split="dev", limit=3, jobs=2))
    cfg = plan.config
    assert cfg.table_k == 7 and 7 in cfg.metrics.ks  # the config's own rule adds the cut-off
    assert [(d.split, d.limit) for d in cfg.datasets] == [("dev", 3)]
    assert cfg.executor.name == "processes" and cfg.executor.jobs == 2
    assert load_plan(path, Overrides(executor="serial", jobs=2)).config.executor.name == "serial"
    assert load_plan(path, Overrides(keep_llm_server=True)).config.llm.keep_server
    # an override is validated like the file's own keys
    with pytest.raises(ConfigError, match="table_k"):
        load_plan(path, Overrides(table_k=0))
    assert load_plan(path).config.table_k == 10  # and the file itself is left alone


def test_plan_json_lists_each_stage_as_built(tmp_path: Path) -> None:
    stored = compile_plan(load_plan(_write(tmp_path))).to_json()
    text = json.dumps(stored)  # plain JSON
    assert json.loads(text)["format"] == 1
    stages = {s["label"]: s for s in stored["stages"]}
    assert stages["graph"]["inputs"] == ["files"] and stages["graph"]["kind"] == "reranker"
    assert stages["bm25"]["params"]["k1"] == 1.2 and stages["bm25"]["params"]["b"] == 0.75
    assert stages["rrf"]["cutoff"] == 20 and "cutoff" not in stages["rrf"]["params"]
    assert stored["chunker"]["name"] == "ast" and stored["chunker"]["params"]["budget"] == 512

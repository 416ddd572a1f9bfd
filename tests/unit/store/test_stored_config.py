"""StoredConfig: one reading of a stored run's config, with the config's own defaults."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.config_defaults import CANDIDATES, TABLE_K
from retrieval_bench.dataset_spec import MetricsSpec
from retrieval_bench.store.stored_config import StoredConfig, stage_label


def _field_default(model: type[Any], name: str) -> Any:
    info = model.model_fields[name]
    return info.default_factory() if info.default_factory is not None else info.default


def _benchmark() -> dict[str, Any]:
    cfg = BenchmarkConfig.model_validate(
        {
            "name": "shop",
            "datasets": [
                {"name": "one", "questions": "q.jsonl"},
                {"name": "two", "questions": "r"},
            ],
            "retrievers": [{"name": "bm25"}, {"name": "dense", "id": "emb"}],
            "fusions": [{"name": "rrf"}],
            "rerankers": [{"name": "cross", "id": "rr", "inputs": ["rrf"]}],
            "table_k": 3,
            "table_columns": ["Acc@1", "MRR"],
            "baseline": {"stage": "emb", "metric": "Acc@1"},
            "metrics": {"ks": [1, 3], "budgets": [4000], "levels": ["file"]},
        }
    )
    return cfg.model_dump(mode="json")


def test_defaults_are_the_configs_own() -> None:
    empty = StoredConfig.of({})
    assert empty.table_k == TABLE_K == _field_default(BenchmarkConfig, "table_k")
    assert empty.candidates == CANDIDATES == _field_default(BenchmarkConfig, "candidates")
    assert empty.ks == _field_default(MetricsSpec, "ks")
    assert empty.budgets == _field_default(MetricsSpec, "budgets")
    assert empty.levels == _field_default(MetricsSpec, "levels")
    assert empty.table_columns == []  # BenchmarkConfig's None: the default columns
    assert _field_default(BenchmarkConfig, "table_columns") is None
    assert dict(empty.baseline) == {}
    assert _field_default(BenchmarkConfig, "baseline") is None


def test_a_default_config_dump_reads_as_the_defaults() -> None:
    data = BenchmarkConfig.model_validate(
        {
            "name": "x",
            "datasets": [{"name": "d", "questions": "q"}],
            "retrievers": [{"name": "bm25"}],
        }
    ).model_dump(mode="json")
    stored, empty = StoredConfig.of(data), StoredConfig.of(None)
    for attr in ("table_k", "candidates", "ks", "budgets", "levels", "table_columns"):
        assert getattr(stored, attr) == getattr(empty, attr), attr


def test_a_benchmark_config_reads_back() -> None:
    stored = StoredConfig.of(_benchmark())
    assert stored.kind == "benchmark" and not stored.is_eval
    assert stored.name == "shop"
    assert stored.dataset_names == ["one", "two"]
    assert [d["questions"] for d in stored.datasets] == ["q.jsonl", "r"]
    assert stored.table_k == 3
    assert stored.ks == [1, 3] and stored.budgets == [4000] and stored.levels == ["file"]
    assert stored.table_columns == ["Acc@1", "MRR"]
    assert dict(stored.baseline) == {"stage": "emb", "metric": "Acc@1"}
    assert stored.retriever_labels == ["bm25", "emb"]
    assert stored.fusion_labels == ["rrf"]
    assert stored.reranker_labels == ["rr"]
    assert stored.stage_labels == ["bm25", "emb", "rrf", "rr"]
    assert stored.predictions is None


def test_an_old_config_missing_keys_reads_with_the_defaults() -> None:
    old = {"name": "old", "datasets": [{"name": "d"}, "junk"], "retrievers": [{"name": "bm25"}],
           "metrics": {"ks": [1, 5]}}  # fmt: skip
    stored = StoredConfig.of(old)
    assert stored.table_k == TABLE_K and stored.candidates == CANDIDATES
    assert stored.ks == [1, 5]
    assert stored.budgets == _field_default(MetricsSpec, "budgets")
    assert stored.levels == _field_default(MetricsSpec, "levels")
    assert stored.table_columns == [] and dict(stored.baseline) == {}
    assert stored.dataset_names == ["d"]  # a non-mapping entry is left out
    assert stored.fusions == [] and stored.rerankers == []
    assert stored.stage_labels == ["bm25"]


def test_an_eval_run_config() -> None:
    cfg = {"kind": "eval", "predictions": "/data/preds.jsonl",
           "metrics": [{"name": "token_f1"}], "n_samples": 3}  # fmt: skip
    stored = StoredConfig.of(cfg)
    assert stored.kind == "eval" and stored.is_eval
    assert stored.predictions == "/data/preds.jsonl"
    assert stored.datasets == [] and stored.dataset_names == [] and stored.stage_labels == []
    assert dict(stored.metrics) == {}  # its metrics are a list of answer metrics
    assert stored.get("metrics") == [{"name": "token_f1"}]
    assert stored.ks == _field_default(MetricsSpec, "ks") and stored.table_k == TABLE_K


def test_values_of_the_wrong_type_read_as_the_defaults() -> None:
    bad = {"table_k": None, "candidates": True, "metrics": {"ks": "5"},
           "table_columns": "MRR", "baseline": ["x"], "datasets": {}}  # fmt: skip
    stored = StoredConfig.of(bad)
    assert stored.table_k == TABLE_K and stored.candidates == CANDIDATES
    assert stored.ks == _field_default(MetricsSpec, "ks")
    assert stored.table_columns == [] and dict(stored.baseline) == {} and stored.datasets == []
    assert StoredConfig.of({"table_k": 0}).table_k == TABLE_K


def test_from_saved_reads_a_config_json() -> None:
    stored = StoredConfig.from_saved({"config": _benchmark(), "provenance": {}})
    assert stored.name == "shop" and stored.table_k == 3
    assert StoredConfig.from_saved({"provenance": {}}).table_k == TABLE_K


def test_it_is_frozen_and_does_not_follow_the_source() -> None:
    raw = {"table_k": 4}
    stored = StoredConfig.of(raw)
    raw["table_k"] = 7
    assert stored.table_k == 4
    with pytest.raises(AttributeError):
        stored.raw = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        stored.raw["table_k"] = 9  # type: ignore[index]
    assert StoredConfig.of(stored) is stored


def test_stage_label_and_unknown_stage_list() -> None:
    assert stage_label({"name": "bm25"}) == "bm25"
    assert stage_label({"name": "dense", "id": "emb"}) == "emb"
    with pytest.raises(ValueError, match="unknown stage list"):
        StoredConfig.of({}).stages("chunker")

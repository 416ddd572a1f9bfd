"""Stage entries are checked against their factories before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.config import parse_config
from retrieval_bench.contracts.registry import RERANKERS
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.validate import validate_stages


def _cfg(**over: Any) -> Any:
    data: dict[str, Any] = {
        "name": "t",
        "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "nowhere"}],
        "retrievers": [{"name": "bm25"}],
        "fusions": [{"name": "rrf", "k_rrf": 60}],
    }
    data.update(over)
    return parse_config(data, "cfg.yaml", Path("/tmp"))


def test_valid_config_passes() -> None:
    validate_stages(_cfg(rerankers=[{"name": "llm-logprob", "input": "rrf", "max_candidates": 5}]))


def test_typo_in_a_fusion_parameter_names_it_and_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as err:
        validate_stages(_cfg(fusions=[{"name": "rrf", "krrf": 60}]))
    msg = str(err.value)
    assert msg.startswith("fusions.0.krrf: unknown parameter 'krrf' of fusion 'rrf'")
    assert "valid parameters: cutoff, id, inputs, k_rrf, level, weights" in msg
    assert "llm" not in msg.split("valid parameters:")[1]


def test_chunker_typo_names_only_the_bad_key() -> None:
    with pytest.raises(ConfigError) as err:
        validate_stages(_cfg(chunker={"name": "window", "overlapp": 3, "size": 50}))
    msg = str(err.value)
    assert "'overlapp'" in msg and "'size'" not in msg
    assert "overlap" in msg.split("valid parameters:")[1]


def test_bad_chunker_value_is_a_config_error_not_a_traceback() -> None:
    with pytest.raises(ConfigError, match=r"chunker \(ast\): budget must be at least 16"):
        validate_stages(_cfg(chunker={"name": "ast", "budget": -5}))


def test_unknown_stage_name_lists_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.1\.name: unknown retriever 'bm52'.*bm25"):
        validate_stages(_cfg(retrievers=[{"name": "bm25"}, {"name": "bm52"}]))


def test_a_subclass_stage_inherits_its_parents_parameters() -> None:
    accepted = set(RERANKERS.params_of("llm-logprob").model_fields)
    assert {"top_logprobs", "max_candidates", "snippet_chars"} <= accepted
    assert "llm" not in accepted  # a service, not a parameter


def test_reranker_input_key_is_allowed_but_typos_are_not() -> None:
    with pytest.raises(ConfigError, match=r"rerankers\.0\.inptu"):
        validate_stages(_cfg(rerankers=[{"name": "llm-yesno", "inptu": "rrf"}]))


def test_parameter_values_are_checked_against_the_declared_types() -> None:
    with pytest.raises(ConfigError, match=r"^retrievers\.0\.k1: Input should be a valid number"):
        validate_stages(_cfg(retrievers=[{"name": "bm25", "k1": "abc"}]))
    with pytest.raises(ConfigError, match=r"^fusions\.0\.weights\.bm25: Input should be a valid"):
        validate_stages(_cfg(fusions=[{"name": "rrf", "weights": {"bm25": "heavy"}}]))
    # ints where floats are declared, and YAML's mappings, are fine
    validate_stages(_cfg(retrievers=[{"name": "bm25", "k1": 1}], fusions=[{"name": "rrf"}]))

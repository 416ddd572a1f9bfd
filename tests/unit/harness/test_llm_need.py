"""Whether a run needs a model is decided per configured stage, not per class:
``exact`` takes an ``llm`` (so validate's rule "a class taking llm declares
needs_llm" holds) but only ``terms: llm`` calls it, so a run of ``exact`` with
``terms: identifiers`` or ``issue`` makes no client and starts no model server
(docs/extending.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.config import BenchmarkConfig, parse_config
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.snapshot_work import make_llm_provider
from retrieval_bench.harness.run.validate import validate_stages
from retrieval_bench.types import Run
from retrieval_bench.workspace import Workspace


def _cfg(retrievers: list[dict[str, Any]], **more: Any) -> BenchmarkConfig:
    return parse_config({
        "name": "t",
        "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "."}],
        "retrievers": retrievers,
        **more,
    })  # fmt: skip


@pytest.mark.parametrize(
    ("params", "calls"),
    [({}, False), ({"terms": "identifiers"}, False), ({"terms": "issue"}, False),
     ({"terms": "raw"}, False), ({"terms": "llm"}, True)],
)  # fmt: skip
def test_exact_calls_the_model_only_with_llm_terms(params: dict[str, Any], calls: bool) -> None:
    exact = RETRIEVERS.type_of("exact")
    assert exact.needs_llm  # it takes llm: the harness passes it the (lazy) client
    assert exact.needs_llm_for(params) is calls


def test_stages_that_always_call_the_model_say_so_for_any_parameters() -> None:
    assert RETRIEVERS.type_of("hyde").needs_llm_for({})
    assert not RETRIEVERS.type_of("bm25").needs_llm_for({})


@pytest.mark.parametrize("terms", ["identifiers", "issue"])
def test_a_run_of_exact_without_llm_terms_makes_no_llm_client(tmp_path: Path, terms: str) -> None:
    cfg = _cfg([{"name": "bm25"}, {"name": "exact", "terms": terms}])
    validate_stages(cfg)  # the class's llm parameter and needs_llm still agree
    assert make_llm_provider(cfg, Workspace(tmp_path), {}) is None


def test_a_run_of_exact_with_llm_terms_gets_a_lazy_client(tmp_path: Path) -> None:
    cfg = _cfg([{"name": "exact", "terms": "llm"}])
    provider = make_llm_provider(cfg, Workspace(tmp_path), {})
    assert provider is not None and provider.made is None  # made on the first model call


def test_a_sweep_cell_that_calls_the_model_gets_the_client(tmp_path: Path) -> None:
    """A sweep's base may have no LLM stage while a cell adds one."""
    base = _cfg([{"name": "bm25"}])
    cell = _cfg([{"name": "bm25"}], rerankers=[{"name": "llm-yesno"}])
    assert make_llm_provider(base, Workspace(tmp_path), {}) is None
    assert make_llm_provider(base, Workspace(tmp_path), {}, more=[base, cell]) is not None


def test_saying_a_configuration_calls_the_model_needs_the_flag() -> None:
    with pytest.raises(TypeError, match="overrides needs_llm_for.*does not declare needs_llm"):

        class Forgot(Retriever):  # would never be given the model it says it calls
            @classmethod
            def needs_llm_for(cls, params: Mapping[str, Any]) -> bool:
                return True

            def index(self, corpus: Corpus, codebase_index: Any = None) -> None: ...

            def search(self, queries: Mapping[str, str], k: int) -> Run:
                return Run("x")

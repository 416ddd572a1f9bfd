"""examples/custom_retriever.py end to end: registered through the public registry
API, named in a benchmark config next to bm25 and fused by rrf, it gets its own
per-stage row, artifacts and TREC file like any built-in retriever."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from retrieval_bench.config import load_config
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.workspace import Workspace

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "custom_retriever.py"
SHOPAPI = REPO_ROOT / "fixtures" / "repos" / "shopapi"

CONFIG = """\
name: custom-retriever
datasets:
  - {{name: shopapi, questions: {repo}/questions.jsonl, snapshot: {repo}}}
chunker: {{name: ast, budget: 512}}
retrievers:
  - {{name: bm25}}
  - {{name: path-match, min_len: {min_len}}}
fusions:
  - {{name: rrf, k_rrf: 60, weights: {{path-match: 0.5}}}}
candidates: 50
table_k: 5
metrics:
  ks: [1, 5, 10]
"""


@pytest.fixture
def example() -> Iterator[ModuleType]:
    """The example module, imported fresh; its registration is undone afterwards."""
    with RETRIEVERS.scoped():
        spec = importlib.util.spec_from_file_location("custom_retriever_example", EXAMPLE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    assert "path-match" not in RETRIEVERS


def _config(tmp_path: Path, min_len: object = 3) -> Path:
    path = tmp_path / "custom.yaml"
    path.write_text(CONFIG.format(repo=SHOPAPI.as_posix(), min_len=min_len))
    return path


@pytest.mark.integration
def test_the_example_retriever_runs_through_a_config(tmp_path: Path, example: ModuleType) -> None:
    made = RETRIEVERS.type_of("path-match")
    assert made is example.PathMatchRetriever
    assert not (made.needs_llm or made.uses_vector_index or made.trainable)

    result = run_benchmark(load_config(_config(tmp_path)), Workspace(tmp_path / "home"))

    assert result.stage_order == ["bm25", "path-match", "rrf"]
    table = result.tables["all"]
    row = table["path-match"]
    for metric in ("P@5", "R@5", "F1@5", "MRR", "nDCG@5", "R@10"):
        assert 0.0 <= row[metric] <= 1.0, metric
    assert row["R@10"] > 0.1  # file names do say something about the questions
    assert table["rrf"]["R@10"] >= table["path-match"]["R@10"]
    (stage,) = [s for s in result.outcomes[0].stages if s.name == "path-match"]
    assert stage.parent == "corpus" and not stage.failures
    assert any(a["matched_words"] for a in stage.artifacts.values())
    assert result.out_dir is not None
    assert (result.out_dir / "runs" / "shopapi" / "path-match.trec").is_file()


@pytest.mark.integration
def test_its_parameters_are_checked_before_any_work(tmp_path: Path, example: ModuleType) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.1\.min_len: Input should be a valid"):
        run_benchmark(load_config(_config(tmp_path, "three")), Workspace(tmp_path / "home"))

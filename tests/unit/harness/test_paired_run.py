"""The paired columns through a whole run: computed by ``summarise`` on the run's
per-query metrics, stored with the stage table (database and ``run.json``), printed by
``rbench run``/``rbench show`` and recomputed per split by
``benchmarks/studies/split_table.py``."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.config import parse_config
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.compare.paired import decode, paired_view
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.metrics.stats import randomisation_test
from retrieval_bench.store.runfile import RUN_FILE
from retrieval_bench.types import Run
from retrieval_bench.workspace import Workspace
from tests.unit.harness.test_answers import QUESTIONS, REPO

ROOT = Path(__file__).resolve().parents[3]


class ReadmeFirst(Retriever):
    """Ranks README.md first for every query and fails on q2 (no result)."""

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        self.ids = [c.id for c in sorted(corpus.chunks, key=lambda c: c.path != "README.md")]

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        ranked = {cid: 1.0 / (i + 1) for i, cid in enumerate(self.ids[:k])}
        return Run("readme", {q: dict(ranked) for q in queries if q != "q2"})


@pytest.fixture
def result(tmp_path: Path) -> Iterator[BenchmarkResult]:
    for path, text in REPO.items():
        (tmp_path / "repo" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / path).write_text(text)
    (tmp_path / "questions.jsonl").write_text("\n".join(map(json.dumps, QUESTIONS)) + "\n")
    cfg = parse_config(
        {
            "name": "tiny",
            "datasets": [{"name": "tiny", "questions": "questions.jsonl", "snapshot": "repo"}],
            "retrievers": [{"name": "bm25"}, {"name": "test-readme", "id": "readme"}],
            "fusions": [
                {"name": "rrf"},
                {"name": "rrf", "id": "rrf-bm25", "weights": {"readme": 0}},
            ],
            "table_k": 2,
            "metrics": {"ks": [1, 2], "budgets": [1000]},
            "baseline": {"metric": "MRR"},
        },
        "tiny.yaml",
        tmp_path,
    )
    with RETRIEVERS.registered("test-readme", ReadmeFirst):
        yield run_benchmark(cfg, Workspace(tmp_path / "home"))


def _split_table() -> ModuleType:
    path = ROOT / "benchmarks" / "studies" / "split_table.py"
    spec = importlib.util.spec_from_file_location("split_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_run_stores_and_prints_the_paired_columns(
    result: BenchmarkResult, capsys: pytest.CaptureFixture[str]
) -> None:
    per_query = result.outcomes[0].per_query
    assert per_query["readme"]["q2"]["failed"] == 1.0
    table = result.tables["all"]
    view = decode(table)
    assert view is not None and (view.baseline, view.metric) == ("bm25", "MRR")  # the defaults
    expected = paired_view(
        per_query, result.stage_order, "bm25", "MRR",
        {"rrf": ["bm25", "readme"], "rrf-bm25": ["bm25"]},
    )  # fmt: skip
    assert view == expected
    # the failed query is left out of readme's pair: a direct call on q1 and q3
    a = [per_query["bm25"][q]["MRR"] for q in ("q1", "q3")]
    b = [per_query["readme"][q]["MRR"] for q in ("q1", "q3")]
    readme = view.tests["readme"]
    assert (readme.n, readme.queries) == (2, 3)
    assert readme.delta == pytest.approx((b[0] - a[0] + b[1] - a[1]) / 2)
    assert readme.p_value == randomisation_test(a, b, n_resamples=10000, seed=0).p_value
    assert view.guards["rrf-bm25"].best_input == "bm25"  # readme weighs 0 there

    assert result.out_dir is not None
    stored = json.loads((result.out_dir / RUN_FILE).read_text())
    by_stage = {s["stage"]: s["metrics"]["all"] for s in stored["stages"]}
    assert decode(by_stage) == view  # run.json carries them (and --rebuild-db with it)

    home = ["--workspace", str(result.out_dir.parents[1])]
    assert main([*home, "show", result.run_id]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("ΔMRR vs bm25      p")
    rows = {line.split()[0]: line.split() for line in lines[3:7]}
    assert rows["bm25"][-2:] == ["—", "—"]
    assert rows["readme"][-2:] == [f"{readme.delta:+.3f}", f"{readme.p_holm:.3f}"]
    assert "pairs: readme 2 of 3 queries (a failed query is left out)" in lines
    assert main([*home, "show", result.run_id, "--json"]) == EXIT_OK
    shown = json.loads(capsys.readouterr().out)
    assert shown["paired"] == view.as_dict()

    split_table = _split_table()
    parts = split_table.tables(result.out_dir, None)
    assert decode(parts["all"]) == view  # the same numbers from query_metrics.jsonl
    other = decode(split_table.tables(result.out_dir, None, "readme", "Acc@1")["all"])
    assert other is not None and (other.baseline, other.metric) == ("readme", "Acc@1")
    rendered = split_table.render("all", parts["all"], False, [])
    assert "ΔMRR vs bm25" in rendered.splitlines()[1]


def test_run_prints_the_columns_in_every_format(
    result: BenchmarkResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "again.json"
    data: dict[str, Any] = result.config.model_dump(mode="json")
    config.write_text(json.dumps(data))
    home = ["--workspace", str(tmp_path / "home")]
    with RETRIEVERS.registered("test-readme", ReadmeFirst):
        assert main([*home, "run", str(config), "--format", "csv"]) == EXIT_OK
        header = capsys.readouterr().out.splitlines()[0]
        assert header.endswith(",ΔMRR vs bm25,p,pairs,worse_than_input")
        assert main([*home, "run", str(config), "--format", "markdown"]) == EXIT_OK
        assert "| ΔMRR vs bm25 | p |" in capsys.readouterr().out
        assert main([*home, "run", str(config), "--json"]) == EXIT_OK
        out = json.loads(capsys.readouterr().out)
    assert out["paired"]["all"]["baseline"] == "bm25"
    assert out["paired"]["all"]["tests"]["readme"]["n"] == 2

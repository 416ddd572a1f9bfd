"""Values, not shared state: a prepared dataset is frozen and no stage changes it; a
retriever's ``index_stats`` travel in its stage result and are summed where chunk
counts are reported; a stage's run is renamed (and cut) as a new run, never in place."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, fields
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from retrieval_bench.cli import main
from retrieval_bench.config import parse_config
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.prepare import PreparedDataset
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.harness.run.snapshot_work import with_index_stats
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.sweeps import get_sweep
from retrieval_bench.types import Run, StageResult
from retrieval_bench.workspace import Workspace

NAME = "test-counting"
STATS = {"texts_embedded": 2, "texts_cached": 3}
FILES = {
    "auth.py": "def verify_token(token):\n    return token == 'ok'\n",
    "cart.py": "def add_item(cart, item):\n    cart.append(item)\n",
    "db.py": "def connect(url):\n    return url\n",
}


class CountingRetriever(Retriever):
    """Reports ``STATS`` from ``index`` and ranks every chunk; keeps the runs it returned."""

    class Params(StageParams):
        weight: float = 1.0

    returned: ClassVar[list[Run]] = []

    def __init__(self, params: Params | None = None) -> None:
        super().__init__()
        self.weight = (params or self.Params()).weight
        self.ids: list[str] = []

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        self.ids = [c.id for c in corpus.chunks]
        self.index_stats = STATS

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        run = Run("own", {q: {c: self.weight / (i + 1) for i, c in enumerate(self.ids)}
                          for q in queries})  # fmt: skip
        self.returned.append(run)
        return run


@pytest.fixture(autouse=True)
def counting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RBENCH_HOME", raising=False)
    CountingRetriever.returned.clear()
    with RETRIEVERS.registered(NAME, CountingRetriever):
        yield


def _snapshot(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def _questions(path: Path, snapshots: list[Path] | None = None, n: int = 3) -> Path:
    gold = list(FILES)
    rows = [
        {"id": f"q{i}", "query": f"question {i}", "gold_files": [gold[i % len(gold)]]}
        | ({"snapshot": str(snapshots[i % len(snapshots)])} if snapshots else {})
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(tmp_path: Path, dataset: dict[str, Any], **hook: Any) -> BenchmarkResult:
    cfg = {"name": "values", "datasets": [{"name": "d", **dataset}],
           "retrievers": [{"name": NAME, "cutoff": 1}]}  # fmt: skip
    return run_benchmark(parse_config(cfg, base_dir=tmp_path), Workspace(tmp_path / "home"), **hook)


def test_a_prepared_dataset_refuses_assignment() -> None:
    ds = PreparedDataset(
        spec=None, snapshot=None, examples=[], row_errors=[], missing_gold={},  # type: ignore[arg-type]
        corpus=Corpus(Path("."), []), fingerprint="f",
    )  # fmt: skip
    for name in ("chunk_stats", "examples", "corpus", "snapshot_groups", "timings"):
        with pytest.raises(FrozenInstanceError):
            setattr(ds, name, None)


def test_running_the_stages_leaves_the_prepared_dataset_as_it_was(tmp_path: Path) -> None:
    seen: list[tuple[PreparedDataset, dict[str, Any]]] = []

    def keep(ds: PreparedDataset) -> None:  # called before the stages run
        kept = {f.name: copy.deepcopy(getattr(ds, f.name)) for f in fields(ds)
                if f.name not in ("spec", "snapshot", "corpus", "codebase_index")}  # fmt: skip
        seen.append((ds, kept))

    snap = _snapshot(tmp_path / "repo")
    result = _run(tmp_path, {"questions": str(_questions(tmp_path / "q.jsonl")),
                             "snapshot": str(snap)}, on_dataset=keep)  # fmt: skip
    ((ds, before),), (outcome,) = seen, result.outcomes
    corpus = ds.corpus
    assert {name: getattr(ds, name) for name in before} == before
    assert ds.corpus is corpus and len(corpus.chunks) == 3
    assert "texts_embedded" not in ds.chunk_stats  # the counts went into a new dataset
    assert outcome.prepared is not ds
    assert outcome.prepared.chunk_stats == {**ds.chunk_stats, **STATS}
    (stage,) = outcome.stages
    assert stage.index_stats == STATS
    # renamed and cut to its top 1 as a new run: the retriever's own run is untouched
    assert stage.run.name == NAME and all(len(d) == 1 for d in stage.run.scores.values())
    (own,) = CountingRetriever.returned
    assert own.name == "own" and all(len(d) == 3 for d in own.scores.values())
    assert result.out_dir is not None
    trec = (result.out_dir / "runs" / "d" / f"{NAME}.trec").read_text().splitlines()
    assert trec and all(line.split()[-1] == NAME for line in trec)  # the TREC tag


def test_index_stats_arrive_summed_in_the_provenance(tmp_path: Path) -> None:
    snaps = [_snapshot(tmp_path / "one"), _snapshot(tmp_path / "two")]
    result = _run(tmp_path, {"questions": str(_questions(tmp_path / "q.jsonl", snaps, n=4))})
    assert result.out_dir is not None
    prov = json.loads((result.out_dir / "config.json").read_text())["provenance"]
    entry = prov["datasets"]["d"]
    assert [g["texts_embedded"] for g in entry["snapshot_groups"]] == [2, 2]
    assert [g["texts_cached"] for g in entry["snapshot_groups"]] == [3, 3]
    assert (entry["texts_embedded"], entry["texts_cached"]) == (4, 6)  # the groups summed
    assert result.outcomes[0].stages[0].index_stats == {"texts_embedded": 4, "texts_cached": 6}


def test_with_index_stats_sums_in_stage_order_into_a_new_dataset() -> None:
    ds = PreparedDataset(
        spec=None, snapshot=None, examples=[], row_errors=[], missing_gold={},  # type: ignore[arg-type]
        corpus=Corpus(Path("."), []), fingerprint="f", chunk_stats={"files_chunked": 5},
    )  # fmt: skip
    stages = [
        StageResult("a", Run("a"), index_stats={"texts_embedded": 1}),
        StageResult("b", Run("b")),
        StageResult("c", Run("c"), index_stats={"texts_cached": 4, "texts_embedded": 2}),
    ]
    summed = with_index_stats(ds, stages)
    counts = [("files_chunked", 5), ("texts_embedded", 3), ("texts_cached", 4)]
    assert list(summed.chunk_stats.items()) == counts
    assert ds.chunk_stats == {"files_chunked": 5}
    assert with_index_stats(ds, stages[1:2]) is ds  # nothing to add


def test_a_sweep_cell_counts_its_own_retrievers(tmp_path: Path, capsys: Any) -> None:
    """Two cells over one chunking, each with its own retriever: each cell's stored
    provenance counts its retriever once (not the other cell's too)."""
    snap = _snapshot(tmp_path / "repo")
    questions = _questions(tmp_path / "q.jsonl", n=12)
    dataset = {"name": "d", "questions": str(questions), "snapshot": str(snap), "hash_split": 0.5}
    cfg = {
        "name": "values-sweep",
        "datasets": [dataset],
        "retrievers": [{"name": NAME}],
        "sweep": {"grid": {f"retrievers.{NAME}.weight": [1.0, 2.0]}, "objective": "Acc@5"},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    home = tmp_path / "home"
    assert main(["--workspace", str(home), "sweep", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    db = ResultsDB(Workspace(home).db_path)
    cells = [c for c in get_sweep(db, out["sweep_id"]).cells if c.run_id]
    assert len(cells) >= 2
    for cell in cells:
        assert cell.run_id is not None
        entry = db.get_run(cell.run_id).provenance["datasets"]["d"]
        assert (entry["texts_embedded"], entry["texts_cached"]) == (2, 3), cell.label

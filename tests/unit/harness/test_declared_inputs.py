"""A run over a config whose fusions and rerankers declare their inputs
(docs/architecture.md#the-stage-graph): each stage reads what it names, records
it, and is measured against it."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.unit.harness.test_answers import config, repo  # noqa: F401  (fixture)

RETRIEVERS = [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}]


def test_fusions_read_and_record_their_declared_inputs(repo: Path) -> None:  # noqa: F811
    cfg = config(
        repo,
        retrievers=RETRIEVERS,
        fusions=[
            {"name": "rrf", "id": "only-bm25", "inputs": ["bm25"]},
            {"name": "rrf", "id": "zero-exact", "weights": {"exact": 0}},
            {"name": "rrf", "id": "of-fusions", "inputs": ["only-bm25", "zero-exact"]},
        ],
        rerankers=[{"name": "code-graph", "id": "graph", "inputs": ["only-bm25"]}],
    )
    ws = Workspace(repo / "home")
    result = run_benchmark(cfg, ws)
    (outcome,) = result.outcomes
    stages = {s.name: s for s in outcome.stages}
    assert stages["bm25"].inputs is None and stages["bm25"].parent == "corpus"
    assert stages["only-bm25"].inputs == ("bm25",)
    assert stages["zero-exact"].inputs == ("bm25", "exact")  # the default: every retriever
    assert stages["of-fusions"].parent == "only-bm25, zero-exact"
    assert stages["graph"].inputs == ("only-bm25",)
    # leaving exact out equals weighing it 0, but for the zero-score tail
    for qid, scores in stages["zero-exact"].run.scores.items():
        positive = {d: s for d, s in scores.items() if s > 0}
        assert stages["only-bm25"].run.scores.get(qid, {}) == positive
    with ResultsDB(ws.db_path) as db:
        parents = {s.stage: s.parent for s in db.stages(result.run_id)}
    assert parents["only-bm25"] == "bm25" and parents["zero-exact"] == "bm25, exact"
    rows = [json.loads(x) for x in (result.out_dir / "queries.jsonl").open()]
    assert rows and all("only-bm25" in r["stages"] for r in rows)

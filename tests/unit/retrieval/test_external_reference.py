"""Reference check: an external run scored by the project equals pytrec_eval.

File qrels come from the shopapi fixture dataset; a seeded external system
ranks files of the snapshot, gold files and files the snapshot does not have
(one with a space, percent-encoded in the TREC file). Its TREC run goes
through the ``external`` stage and :func:`evaluate_stage`, and every file
measure equals trec_eval's (via pytrec_eval) on the same qrels and run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.datasets.jsonl import load_examples
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.store.trec import write_run
from retrieval_bench.types import Run
from tests.unit.retrieval.conftest import window_corpus

pytrec_eval = pytest.importorskip("pytrec_eval")

SHOPAPI = Path(__file__).resolve().parents[3] / "fixtures" / "repos" / "shopapi"
KS = (1, 3, 5, 10)
ABSENT = ["vendor/ghost.py", "ghost dir/a b.py", "legacy/old_routes.py"]


def test_external_run_equals_pytrec_eval(tmp_path: Path) -> None:
    examples = load_examples(SHOPAPI / "questions.jsonl").examples
    corpus = window_corpus(SHOPAPI)
    assert len(examples) > 20
    qrels = {ex.id: dict.fromkeys(ex.gold_files, 1) for ex in examples}

    rng = np.random.default_rng(7)
    paths = corpus.paths
    files: dict[str, dict[str, float]] = {}
    for ex in examples[:-1]:  # the last query gets no row: not scored by trec_eval, 0 here
        pool = list(dict.fromkeys([*rng.choice(paths, 8, replace=False), *ex.gold_files]))
        pool += ABSENT
        n = int(rng.integers(1, len(pool) + 1))
        picked = [pool[i] for i in rng.permutation(len(pool))[:n]]
        scores = rng.permutation(len(picked)).astype(float) * 0.5 + 1.0  # distinct: no ties
        files[ex.id] = {p: float(s) for p, s in zip(picked, scores, strict=True)}
    assert any(p in ABSENT for d in files.values() for p in d)
    trec = tmp_path / "system.trec"
    write_run(trec, Run("system", files))

    stage = RETRIEVERS.create("external", path=str(trec), format="trec")
    stage.index(corpus)
    run = stage.search({ex.id: ex.query for ex in examples}, k=1000)
    assert stage.failures == {examples[-1].id: "no external result"}
    ours = evaluate_stage(run, examples, corpus, ks=KS, budgets=())
    assert ours.unknown_chunks == 0 and ours.missing == [examples[-1].id]

    ks = ",".join(map(str, KS))
    measures = {f"P_{ks}", f"recall_{ks}", f"ndcg_cut_{ks}", f"success_{ks}", "recip_rank", "map"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(files)
    assert set(ref) == set(files)
    names = {"MRR": "recip_rank", "MAP": "map"}
    for k in KS:
        names |= {f"P@{k}": f"P_{k}", f"R@{k}": f"recall_{k}", f"nDCG@{k}": f"ndcg_cut_{k}"}
        names |= {f"Hit@{k}": f"success_{k}"}
    for qid, expected in ref.items():
        for mine, theirs in names.items():
            assert ours.per_query[qid][mine] == pytest.approx(expected[theirs], abs=1e-9), (
                qid,
                mine,
            )
    # the absent files count: some query's precision is below what the snapshot files give
    lowered = [
        q
        for q, d in files.items()
        if any(p in ABSENT for p in sorted(d, key=d.__getitem__, reverse=True)[:1])
    ]
    assert lowered and all(ours.per_query[q]["P@1"] == 0.0 for q in lowered)

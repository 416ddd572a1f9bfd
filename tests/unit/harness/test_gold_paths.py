"""``gold_paths: suffix`` maps a gold path the snapshot lacks to the one file ending
with it (docs/datasets.md#missing-gold); ``hash_split`` gives rows without a split a
stable one (docs/datasets.md#splits)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from retrieval_bench.config import parse_config
from retrieval_bench.datasets.splits import with_hash_split
from retrieval_bench.harness.run.prepare import remap_gold_by_suffix
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.types import Example, Span
from retrieval_bench.workspace import Workspace


def _ex(qid: str, *gold: str) -> Example:
    return Example(qid, "q", tuple(gold), (Span(gold[0], 1, 2),))


def test_suffix_maps_only_unique_matches() -> None:
    paths = {"src/requests/utils.py", "src/requests/api.py", "a/api.py", "setup.py"}
    out, mapping = remap_gold_by_suffix(
        [_ex("q1", "requests/utils.py", "setup.py"), _ex("q2", "api.py"), _ex("q3", "gone.py")],
        paths,
    )
    assert mapping == {"requests/utils.py": "src/requests/utils.py"}
    assert out[0].gold_files == ("src/requests/utils.py", "setup.py")
    assert out[0].gold_spans[0].path == "src/requests/utils.py"
    assert out[1].gold_files == ("api.py",)  # two files end with /api.py: left alone
    assert out[2].gold_files == ("gone.py",)


def test_a_run_scores_the_mapped_path_and_records_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo" / "src" / "pkg"
    repo.mkdir(parents=True)
    (repo / "auth.py").write_text("def verify_token(token):\n    return token == 'ok'\n")
    (repo / "db.py").write_text("def connect():\n    return None\n")
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "a", "query": "verify token", "gold_files": ["pkg/auth.py"]}))
    cfg = {"name": "t", "retrievers": [{"name": "bm25"}],
           "datasets": [{"name": "d", "questions": str(q), "snapshot": str(tmp_path / "repo"),
                         "gold_paths": "suffix"}]}  # fmt: skip
    result = run_benchmark(parse_config(cfg), Workspace(tmp_path / "home"))
    (outcome,) = result.outcomes
    assert outcome.prepared.examples[0].gold_files == ("src/pkg/auth.py",)
    assert outcome.prepared.missing_gold == {}
    assert outcome.per_query["bm25"]["a"]["Acc@1"] == 1.0
    assert outcome.prepared.remapped_gold == {"pkg/auth.py": "src/pkg/auth.py"}
    exact = {**cfg, "datasets": [{**cfg["datasets"][0], "gold_paths": "exact"}]}
    plain = run_benchmark(parse_config(exact), Workspace(tmp_path / "home2"))
    assert plain.outcomes[0].prepared.missing_gold == {"a": ["pkg/auth.py"]}


def test_hash_split_is_stable_and_replaces_given_splits() -> None:
    rows = [Example(f"id-{i}", "q", ("a.py",)) for i in range(400)]
    split = [with_hash_split(e, 0.25).split for e in rows]
    assert split == [with_hash_split(e, 0.25).split for e in reversed(rows)][::-1]
    assert 0.18 < split.count("test") / len(rows) < 0.32
    assert set(split) == {"dev", "test"}
    given = Example("x", "q", ("a.py",), split="train")  # a carried split is replaced
    assert (
        with_hash_split(given, 0.5).split == with_hash_split(replace(given, split=None), 0.5).split
    )
    assert with_hash_split(given, 0.5).split in ("dev", "test")

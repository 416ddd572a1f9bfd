"""Questions grouped by their own snapshots, merged into one dataset's scores;
query ids namespaced when two datasets share one; SWE-bench import formats
(docs/datasets.md#per-question-snapshots)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.config import parse_config
from retrieval_bench.datasets.swebench import load_swebench
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.workspace import Workspace
from tests.unit.test_snapshot_sources import _tarball

ALPHA = {"auth.py": "def verify_token(token):\n    return token == 'ok'\n", "db.py": "x = 1\n"}
BETA = {"cart.py": "def add_item(cart, item):\n    cart.append(item)\n", "db.py": "y = 2\n"}


def _rows(tmp_path: Path) -> list[dict[str, object]]:
    _tarball(tmp_path / "alpha.tar.gz", ALPHA, top="alpha")
    _tarball(tmp_path / "beta.tgz", BETA, top="beta")
    a, b = "alpha.tar.gz", "beta.tgz"
    return [
        {"id": "a1", "query": "verify token", "gold_files": ["auth.py"], "snapshot": a},
        {"id": "b1", "query": "add item to cart", "gold_files": ["cart.py"], "snapshot": b},
        {"id": "a2", "query": "where is x set", "gold_files": ["db.py"], "snapshot": a},
    ]


def _run(tmp_path: Path, datasets: list[dict[str, object]], ws: Workspace):  # type: ignore[no-untyped-def]
    cfg = {"name": "t", "datasets": datasets, "retrievers": [{"name": "bm25"}]}
    return run_benchmark(parse_config(cfg, base_dir=tmp_path), ws)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_groups_merged_equal_separate_runs(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    rows = _rows(tmp_path)
    both = _run(tmp_path, [{"name": "d", "questions": str(_write(tmp_path / "q.jsonl", rows))}], ws)
    (outcome,) = both.outcomes
    assert sorted(e.id for e in outcome.prepared.examples) == ["a1", "a2", "b1"]
    groups = outcome.prepared.snapshot_groups
    assert [g["query_ids"] for g in groups] == [["a1", "a2"], ["b1"]]
    assert all(g["kind"] == "tarball" for g in groups)
    assert set(outcome.stages[0].run.scores) == {"a1", "a2", "b1"}
    merged = outcome.per_query["bm25"]
    alone: dict[str, dict[str, float]] = {}
    for name, picked in (("a", [rows[0], rows[2]]), ("b", [rows[1]])):
        snap = str(tmp_path / str(picked[0]["snapshot"]))
        q = _write(tmp_path / f"{name}.jsonl", [{**r, "snapshot": None} for r in picked])
        res = _run(tmp_path, [{"name": name, "questions": str(q), "snapshot": snap}], ws)
        alone.update(res.outcomes[0].per_query["bm25"])
    assert merged == alone
    assert both.counts["all"] == 3
    drill = [json.loads(x) for x in (both.out_dir / "queries.jsonl").open()]
    assert {d["query_id"] for d in drill} == {"a1", "a2", "b1"}


def test_bad_snapshot_skips_its_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(tmp_path)
    (tmp_path / "broken.tar.gz").write_bytes(b"garbage")
    rows.append({"id": "c1", "query": "q", "gold_files": ["x.py"], "snapshot": "broken.tar.gz"})
    rows.append({"id": "a1", "query": "dup", "gold_files": ["x.py"]})
    q = _write(tmp_path / "q.jsonl", rows)
    res = _run(tmp_path, [{"name": "d", "questions": str(q)}], Workspace(tmp_path / "h"))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "broken.tar.gz" in line]
    assert len(lines) == 1 and "skipped (1 question)" in lines[0]
    (fail,) = res.outcomes[0].prepared.snapshot_failures
    assert fail["query_ids"] == ["c1"] and "cannot read archive" in str(fail["reason"])
    # c1 could not be run: it stays in the denominator as a miss (0 in every metric)
    assert res.counts["all"] == 4 and list(res.failed["all"]) == ["c1"]
    assert res.outcomes[0].per_query["bm25"]["c1"]["Acc@10"] == 0.0
    assert any("duplicate id" in str(e) for e in res.outcomes[0].prepared.row_errors)


def test_namespaced_when_ids_collide(tmp_path: Path) -> None:
    rows = _rows(tmp_path)
    q1 = _write(tmp_path / "one.jsonl", rows[:1])
    q2 = _write(tmp_path / "two.jsonl", [{**rows[0], "query": "token check"}])
    res = _run(
        tmp_path,
        [{"name": "one", "questions": str(q1)}, {"name": "two", "questions": str(q2)}],
        Workspace(tmp_path / "h"),
    )
    ids = {q for o in res.outcomes for q in o.per_query["bm25"]}
    assert ids == {"one:a1", "two:a1"}
    assert res.counts["all"] == 2


SWE_ROW = {
    "instance_id": "org__proj-1",
    "repo": "org/proj",
    "base_commit": "a" * 40,
    "problem_statement": "f() crashes",
    "patch": "--- a/src/mod.py\n+++ b/src/mod.py\n@@ -1 +1 @@\n-a\n+b\n",
}


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet"])
def test_import_swebench_formats(tmp_path: Path, fmt: str) -> None:
    rows = [SWE_ROW, {**SWE_ROW, "instance_id": "org__proj-2"}]
    src = tmp_path / f"swe.{fmt}"
    if fmt == "json":
        src.write_text(json.dumps(rows))
    elif fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows), src)
    assert [e.id for e in load_swebench(src).examples] == ["org__proj-1", "org__proj-2"]
    out = tmp_path / "out.jsonl"
    assert main(["dataset", "import-swebench", str(src), str(out)]) == EXIT_OK
    first = json.loads(out.read_text().splitlines()[0])
    assert first["repo"] == "org/proj" and first["commit"] == "a" * 40
    assert first["gold_files"] == ["src/mod.py"] and "snapshot" not in first

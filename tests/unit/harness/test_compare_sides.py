"""What ``rbench compare`` says about the runs it pairs: runs on different data
(same query ids, different questions) are refused unless
``--allow-different-data``, which prints a warning; each run's config and data
are named; stages only one run has are listed, not dropped silently.

Hand-made runs in a temporary results database (real SQLite); the CLI is run
in-process with :func:`retrieval_bench.cli.main`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_bench.harness.compare.runs import compare_runs
from retrieval_bench.harness.compare.sides import DifferentDataError
from retrieval_bench.store.db import ResultsDB
from tests.unit.harness.test_compare import BASE_R, CAND_R, rows

FP_A = "1a2b3c4d5e6f7a8b"
FP_B = "9f8e7d6c5b4a3921"


def add_run(
    db: ResultsDB,
    run_id: str,
    stages: Mapping[str, Mapping[str, Mapping[str, float]]],
    fingerprint: str | None,
    config: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> str:
    """A finished run whose record holds ``fingerprint`` as its dataset fingerprint."""
    cfg = config or {"table_k": 5, "datasets": [{"name": "shop"}]}
    prov = provenance or {"config_fingerprint": f"cfg-{run_id}-0123456789"}
    db.start_run(f"name-{run_id}", cfg, prov, dataset_fingerprint=fingerprint, run_id=run_id)
    for stage, per_query in stages.items():
        db.record_stage(run_id, stage, {"all": {m: 0.0 for m in next(iter(per_query.values()))}})
        db.record_query_metrics(run_id, stage, per_query)
    db.finish_run(run_id)
    return run_id


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with runs ``a`` (data FP_A), ``b`` (data FP_B, the same query ids)
    and ``same`` (data FP_A, other stages)."""
    root = tmp_path / "ws"
    base, cand = rows(**{"R@5": BASE_R}), rows(**{"R@5": CAND_R})
    with ResultsDB(root / "rbench.sqlite") as db:
        add_run(db, "a", {"bm25": base, "rrf": base}, FP_A)
        add_run(db, "b", {"bm25": cand, "rrf": cand}, FP_B)
        add_run(db, "same", {"bm25": cand, "dense": cand}, FP_A)
    return root


def test_runs_on_different_data_are_refused_in_one_line_exit_2(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(ws), "compare", "a", "b"]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "rbench: error: runs a and b were measured on different data (a: shop, dataset "
        f"fingerprint {FP_A}; b: shop, dataset fingerprint {FP_B}): the same query id may be "
        "a different question; compare runs on the same dataset, or pass "
        "--allow-different-data to pair them by id anyway\n"
    )
    # the gate refuses too: a pass on different questions would be a false pass
    assert main(["--workspace", str(ws), "compare", "b", "--gate", "a"]) == EXIT_BAD_INPUT
    assert "measured on different data" in capsys.readouterr().err


def test_allow_different_data_compares_with_a_warning_line_in_the_output(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workspace", str(ws), "compare", "a", "b", "--allow-different-data"]
    assert main([*argv, "--resamples", "200"]) == EXIT_OK
    out = capsys.readouterr().out
    warning = (
        f"warning: runs a and b were measured on different data (a: shop, dataset fingerprint "
        f"{FP_A}; b: shop, dataset fingerprint {FP_B}): the same query id may be a different "
        "question; paired by id anyway (--allow-different-data)"
    )
    assert warning in out.splitlines()
    assert "R@5 (higher is better)" in out  # and the comparison follows
    assert main([*argv, "--resamples", "200", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["data_warnings"] == [warning.removeprefix("warning: ")]
    assert data["sides"]["b"]["dataset_fingerprint"] == FP_B


def test_runs_on_the_same_data_compare_without_a_warning(ws: Path) -> None:
    with ResultsDB(ws / "rbench.sqlite") as db:
        comp = compare_runs(db, ["a", "same"], n_resamples=200)
        assert comp.data_warnings == []
        # two stages of one run never differ in data
        assert compare_runs(db, ["b:bm25", "b:rrf"], n_resamples=200).data_warnings == []
        with pytest.raises(DifferentDataError):
            compare_runs(db, ["a:bm25", "b:rrf"], n_resamples=200)


def test_a_dataset_subset_checks_that_dataset_alone(tmp_path: Path) -> None:
    """Runs over {one, two} and {one}: different as a whole, the same on dataset one."""
    db = ResultsDB(tmp_path / "rbench.sqlite")
    both = {"table_k": 5, "datasets": [{"name": "one"}, {"name": "two"}]}
    one = {"table_k": 5, "datasets": [{"name": "one"}]}
    per_dataset = {
        "one": {"dataset_fingerprint": "f" * 64},
        "two": {"dataset_fingerprint": "e" * 64},
    }
    add_run(db, "ab", {"bm25": rows(**{"R@5": BASE_R})}, f"{'f' * 16}+{'e' * 16}", both,
            {"datasets": per_dataset})  # fmt: skip
    add_run(db, "a", {"bm25": rows(**{"R@5": CAND_R})}, "f" * 16, one,
            {"datasets": {"one": per_dataset["one"]}})  # fmt: skip
    for run in ("ab", "a"):
        (tmp_path / "results" / run).mkdir(parents=True)
        lines = [{"dataset": "one", "stage": "bm25", "query_id": q} for q in rows(x=BASE_R)]
        (tmp_path / "results" / run / "query_metrics.jsonl").write_text(
            "\n".join(json.dumps(x) for x in lines) + "\n"
        )
    with pytest.raises(DifferentDataError, match=f"ab: one, two, dataset fingerprint {'f' * 16}"):
        compare_runs(db, ["ab", "a"], n_resamples=200)
    comp = compare_runs(db, ["ab", "a"], subset="dataset=one", n_resamples=200)
    assert comp.data_warnings == [] and comp.rows


def test_eval_runs_are_not_checked(tmp_path: Path) -> None:
    """An eval run's fingerprint is its predictions file's: two prediction files of the
    same questions always differ, and comparing them is what ``rbench eval`` runs are for."""
    db = ResultsDB(tmp_path / "rbench.sqlite")
    answers = {"answer": rows(**{"token_f1": BASE_R})}
    add_run(db, "p1", answers, FP_A, {"kind": "eval", "predictions": "/x/p1.jsonl"})
    add_run(db, "p2", answers, FP_B, {"kind": "eval", "predictions": "/x/p2.jsonl"})
    comp = compare_runs(db, ["p1", "p2"], n_resamples=200)
    assert comp.data_warnings == [] and comp.sides["p2"].datasets == ["/x/p2.jsonl"]


def test_output_names_each_runs_config_and_the_stages_one_side_lacks(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--workspace", str(ws), "compare", "a", "same", "--resamples", "200"]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "baseline a: config name-a (config fingerprint cfg-a-012345), "
        f"data shop (dataset fingerprint {FP_A})  [subset all]"
    )
    assert lines[1] == (
        "candidate same: config name-same (config fingerprint cfg-same-012), "
        f"data shop (dataset fingerprint {FP_A})"
    )
    assert lines[2] == "stages not compared: only in baseline a: rrf; only in candidate same: dense"
    argv = ["--workspace", str(ws), "compare", "a", "same", "--json", "--resamples", "200"]
    assert main(argv) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["stage_gaps"] == [
        {"candidate": "same", "baseline_only": ["rrf"], "candidate_only": ["dense"]}
    ]
    assert {r["stage"] for r in data["rows"]} == {"bm25"}
    assert data["sides"]["a"]["name"] == "name-a"


def _write_questions(results: Path, run_id: str, fingerprints: Mapping[str, str | None]) -> None:
    """``results/<run_id>/queries.jsonl`` with one line per question (its fingerprint)."""
    folder = results / run_id
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"dataset": "shop", "query_id": q, **({"question_fingerprint": fp} if fp else {})}
        for q, fp in fingerprints.items()
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_different_question_sets_pair_when_every_shared_id_is_the_same_question(
    ws: Path,
) -> None:
    """Run ``a`` scored q1..q8, run ``b`` (other dataset fingerprint: a larger set) too:
    with equal per-question fingerprints the shared ids pair, with a note; one shared
    id that is a different question, or a run folder without fingerprints, is refused."""
    results = ws / "results"
    same = {f"q{i}": f"fp{i}" for i in range(1, 9)}
    _write_questions(results, "a", same)
    _write_questions(results, "b", {**same, "q9": "fp9"})
    with ResultsDB(ws / "rbench.sqlite") as db:
        comp = compare_runs(db, ["a", "b"], n_resamples=200)
        assert comp.rows
        assert comp.data_warnings == [
            f"runs a and b scored different question sets (shop, dataset fingerprint {FP_A}; "
            f"shop, dataset fingerprint {FP_B}); the 8 query id(s) both have are the same "
            "questions in both (equal question fingerprints), so they are paired"
        ]
        _write_questions(results, "b", {**same, "q3": "another question"})
        with pytest.raises(DifferentDataError):
            compare_runs(db, ["a", "b"], n_resamples=200)
        _write_questions(results, "b", dict.fromkeys(same))  # a run from before fingerprints
        with pytest.raises(DifferentDataError):
            compare_runs(db, ["a", "b"], n_resamples=200)

"""``rbench eval PREDICTIONS.jsonl`` end to end: real metrics, real store, real files."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, main
from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.harness.eval.predictions import build, consistency_reports, judges
from retrieval_bench.metrics.answer.factory import as_spec
from retrieval_bench.store.db import ResultsDB
from tests.fakes.llm import ScriptedLLM
from tests.integration.conftest import REPO_ROOT, write_jsonl

pytestmark = pytest.mark.integration

ANSWERS = REPO_ROOT / "benchmarks" / "eval" / "fixtures_answers.jsonl"
TEXT_METRICS = ["exact_match", "token_f1", "bleu", "rouge1", "rouge2", "rougeL"]


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ANSWERS.read_text().splitlines()]


def _db(workspace: Path) -> ResultsDB:
    return ResultsDB(workspace / "rbench.sqlite")


def test_default_text_metrics_on_the_fixture_answers(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(ANSWERS)]) == EXIT_OK
    out = capsys.readouterr().out
    table = out.splitlines()
    assert table[0].startswith(f"{ANSWERS} (90 samples, 6 metrics")
    assert table[1].split()[:2] == ["metric", "mean"]
    assert [line.split()[0] for line in table[3:9]] == TEXT_METRICS

    (run,) = _db(workspace).list_runs()
    assert run.name == "fixtures_answers.jsonl" and run.status == "done"
    assert run.config["kind"] == "eval" and run.config["n_samples"] == 90
    assert [m["name"] for m in run.config["metrics"]] == TEXT_METRICS
    assert run.dataset_fingerprint == hashlib.sha256(ANSWERS.read_bytes()).hexdigest()
    assert run.provenance["dataset_fingerprint"] == run.dataset_fingerprint
    assert run.provenance["packages"]["sacrebleu"]  # the versions behind the numbers
    assert f"run {run.id} stored in" in out

    db = _db(workspace)
    per_sample = db.query_metrics(run.id, "answer")
    rows = _rows()
    assert set(per_sample) == {r["id"] for r in rows}
    assert all(set(v) == set(TEXT_METRICS) for v in per_sample.values())
    same = {r["id"]: r["prediction"].split() == r["reference"].split() for r in rows}
    for r in rows:
        assert per_sample[r["id"]]["exact_match"] == (1.0 if same[r["id"]] else 0.0)
        if r["kind"] == "exact":
            assert per_sample[r["id"]]["token_f1"] == 1.0
        if r["kind"] == "empty":
            assert per_sample[r["id"]]["token_f1"] == 0.0
    exact_share = sum(same.values()) / len(rows)
    table_means = db.stage_table(run.id)["answer"]
    assert table_means["exact_match"] == pytest.approx(exact_share)
    assert table_means["token_f1"] == pytest.approx(
        sum(v["token_f1"] for v in per_sample.values()) / 90
    )
    assert "bleu_corpus" in table_means

    results = workspace / "results" / run.id
    config = json.loads((results / "config.json").read_text())
    assert config["config"]["predictions"] == str(ANSWERS)
    assert config["provenance"]["dataset_fingerprint"] == run.dataset_fingerprint
    scores = [json.loads(x) for x in (results / "scores.jsonl").read_text().splitlines()]
    assert [s["id"] for s in scores] == [r["id"] for r in rows]


def test_json_output_and_per_sample_file(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "scores" / "per_sample.jsonl"
    out_file.parent.mkdir()  # --out never creates a folder (docs/architecture.md#output-files)
    argv = [
        "eval",
        str(ANSWERS),
        "--metric",
        "token_f1",
        "--metric",
        "bleu:max_ngram_order=2,id=bleu2",
    ]
    assert main([*argv, "--json", "--out", str(out_file), "--name", "two"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["samples"] == 90 and data["name"] == "two"
    assert list(data["metrics"]) == ["token_f1", "bleu2"]
    assert data["metrics"]["token_f1"]["count"] == 90
    assert data["metrics"]["token_f1"]["ci_low"] <= data["metrics"]["token_f1"]["mean"]
    assert isinstance(data["metrics"]["bleu2"]["corpus"], float)
    assert data["failures"] == [] and data["row_errors"] == []

    lines = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert len(lines) == 90
    assert set(lines[0]) == {"id", "metrics", "errors", "reasons"}
    assert set(lines[0]["metrics"]) == {"token_f1", "bleu2"}
    stored = _db(workspace).query_metrics(data["run_id"], "answer")
    by_id = {x["id"]: x["metrics"]["token_f1"] for x in lines}
    assert {q: v["token_f1"] for q, v in stored.items()} == pytest.approx(by_id)


def test_bad_rows_are_reported_and_the_rest_scored(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"id": "a", "answer": "the cat sat", "ground_truth": "the cat sat"},
            "{oops",
            {"id": "b", "reference": "no prediction here"},
            {"id": "c", "output": "a dog", "expected": ["the dog", "a dog"]},
            {"id": "d", "answer": "x", "output": "y"},
        ],
    )
    assert main(["eval", str(path), "--metric", "exact_match", "--no-store"]) == EXIT_OK
    captured = capsys.readouterr()
    assert f"{path}: line 2: invalid JSON" in captured.err
    assert f"{path}: line 3: no prediction" in captured.err
    assert f"{path}: line 5: ambiguous prediction: 'answer' and 'output' differ" in captured.err
    row = next(x for x in captured.out.splitlines() if x.startswith("exact_match"))
    assert row.split()[1:7] == ["1.0000", "0.0000", "1.0000", "1.0000", "2", "0"]
    assert "stored" not in captured.out
    assert not (workspace / "rbench.sqlite").exists() or _db(workspace).list_runs() == []


def test_empty_file_is_bad_input(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["eval", str(empty)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith(f"rbench: error: {empty}: no valid prediction rows")


def test_missing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "nope.jsonl")]) == EXIT_BAD_INPUT
    assert "does not exist" in capsys.readouterr().err


def test_unknown_metric_is_one_line_bad_input(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(ANSWERS), "--metric", "no_such_metric"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("rbench: error:")
    assert "no_such_metric" in err
    assert not (workspace / "rbench.sqlite").exists() or _db(workspace).list_runs() == []


def test_an_unreachable_judge_fails_every_sample_and_stores_nulls(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 when nothing could be scored; missing values are NULL in the store."""
    config = tmp_path / "judge.yaml"
    llm = {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "timeout_s": 2, "cache": False}
    config.write_text(json.dumps({"llm": llm, "answer_metrics": ["llm_judge"]}))
    path = write_jsonl(tmp_path / "p.jsonl", _rows()[:2])
    assert main(["eval", str(path), "--config", str(config)]) == EXIT_FAILED
    captured = capsys.readouterr()
    assert "2 missing values" in captured.out and "LLM call failed" in captured.out
    assert "every sample" in captured.err
    (run,) = _db(workspace).list_runs()
    assert (run.status, run.error) == ("failed", "every sample failed on every metric")
    stored = _db(workspace).query_metrics(run.id, "answer")
    assert all(math.isnan(v["llm_judge"]) for v in stored.values()) and len(stored) == 2
    assert {q for _, q, _ in _db(workspace).failures(run.id)} == {r["id"] for r in _rows()[:2]}


def test_consistency_flag_checks(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", str(ANSWERS), "--metric", "exact_match", "--no-store"]
    assert main([*argv, "--consistency", "1"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err == "rbench: error: --consistency needs at least 2 repeats (0 for no check), got 1"
    assert main([*argv, "--consistency", "3"]) == EXIT_OK
    assert "no LLM-judge metric to check" in capsys.readouterr().err


def test_judges_inside_composites_get_a_consistency_report() -> None:
    """Offline: a scripted model that always answers 4 agrees with itself perfectly."""
    llm = ScriptedLLM("4")
    specs = [as_spec({"id": "quality", "parts": ["exact_match", "llm_judge"]})]
    metrics = build(specs, lambda: llm)
    assert [label for label, _ in judges(metrics)] == ["quality.llm_judge"]
    samples = [Sample("a", ("a",), id="s1"), Sample("b", ("c",), id="s2")]
    reports = consistency_reports(metrics, samples, 3)
    report = reports["quality.llm_judge"].as_dict()
    assert (report["repeats"], report["n_samples"], report["pairwise_agreement"]) == (3, 2, 1.0)
    assert len(llm.requests) == 6


# Last: needs the real local model server (session fixture).
def test_llm_judge_against_the_real_model_with_a_consistency_check(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    try:
        server = request.getfixturevalue("llm_server")
    except pytest.FixtureLookupError:
        pytest.skip("the llm_server fixture is not available")
    config = tmp_path / "judge.yaml"
    config.write_text(
        json.dumps({"llm": {"base_url": server.base_url}, "answer_metrics": ["llm_judge"]})
    )
    rows = [r for r in _rows() if r["kind"] in ("exact", "wrong", "empty")]
    picked = [next(r for r in rows if r["kind"] == k) for k in ("exact", "wrong", "empty")]
    path = write_jsonl(tmp_path / "three.jsonl", picked)
    code = main(["eval", str(path), "--config", str(config), "--consistency", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    judge = data["metrics"]["llm_judge"]
    assert judge["count"] + judge["missing"] == 3
    assert code == (EXIT_OK if judge["count"] else EXIT_FAILED)
    report = data["consistency"]["llm_judge"]
    assert report["repeats"] == 2 and report["n_samples"] == 3
    assert [s["id"] for s in report["samples"]] == [r["id"] for r in picked]
    run = _db(workspace).get_run(data["run_id"])
    assert run.provenance["models"]["llm"]
    consistency = json.loads((workspace / "results" / run.id / "consistency.json").read_text())
    assert consistency["llm_judge"]["repeats"] == 2


def test_python_api_mirrors_eval_and_compare(workspace: Path, tmp_path: Path) -> None:
    """api.evaluate stores a run like ``rbench eval``; api.compare pairs two of them."""
    from retrieval_bench import api
    from retrieval_bench.harness.compare.runs import gate
    from retrieval_bench.workspace import Workspace

    ws = Workspace(workspace)
    good = api.evaluate(ANSWERS, ["token_f1", "exact_match"], ws, name="good")
    rows = _rows()
    for row in rows:  # a worse system: every prediction cut to its first word
        row["prediction"] = " ".join(str(row.get("prediction", "")).split()[:1])
    worse_file = write_jsonl(tmp_path / "worse.jsonl", rows)
    worse = api.evaluate(worse_file, ["token_f1", "exact_match"], ws, name="worse")
    assert good.run_id and worse.run_id
    assert worse.result.aggregates["token_f1"].mean < good.result.aggregates["token_f1"].mean
    comp = api.compare([good.run_id, worse.run_id], ws, n_resamples=500)
    assert comp.metrics == ["token_f1", "exact_match"]
    row = comp.rows_for("token_f1")[0]
    assert row.n_pairs == 90 and row.delta < 0 and row.direction == "worse"
    assert [r.metric for r in gate(comp)] == ["token_f1"]

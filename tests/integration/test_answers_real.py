"""The answer stage against the real local model (llama.cpp + SmolLM2-135M): a
benchmark on the shopapi fixture answers 3 questions from the rrf stage's chunks,
scores them with token F1 and grounded_refs, stores them (answers.jsonl, the
results database) and prints the answer section.

The 135M model answers poorly; the test checks the plumbing (every question gets
an answer or a recorded failure, every value is in [0, 1] or missing, what was
cited is checked against the snapshot), not the quality. Run with ``-s`` to see
the printed section.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.llm.local_server import ServerState
from retrieval_bench.store.db import ResultsDB
from tests.integration.conftest import FIXTURES

pytestmark = pytest.mark.integration


def _config(path: Path, base_url: str) -> Path:
    cfg = {
        "name": "answers-real",
        "datasets": [
            {
                "name": "shopapi",
                "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                "snapshot": str(FIXTURES / "shopapi"),
                "limit": 3,
            }
        ],
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
        # no response cache: the answers must really come from the model
        "llm": {"base_url": base_url, "cache": False, "timeout_s": 120},
        # small prompts: SmolLM2 on a shared CPU is slow (n_ctx is 2048 anyway)
        "answerer": {"rung": "where_to_look", "k": 2, "max_context_tokens": 400, "max_tokens": 64},
        "answer_metrics": ["token_f1", "grounded_refs"],
    }
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def test_benchmark_answers_with_the_local_model(
    tmp_path: Path,
    workspace: Path,
    llm_server: ServerState,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _config(tmp_path / "answers.yaml", llm_server.base_url)
    assert main(["run", str(config)]) == EXIT_OK
    out = capsys.readouterr().out
    with capsys.disabled():
        print(out)
    assert "answers-real answers (rung where_to_look, top 2 chunks of rrf; 3 questions" in out
    section = out[out.index("answers-real answers") :]
    for metric in ("token_f1", "grounded_refs"):
        assert f"\n{metric} " in section
    assert "answer stage LLM: 3 calls (answers 3, metrics 0)" in section
    assert "file references:" in section

    db = ResultsDB(workspace / "rbench.sqlite")
    (run,) = db.list_runs()
    assert run.status == "done"
    assert [s.stage for s in db.stages(run.id)] == ["bm25", "exact", "rrf", "answer"]
    per_query = db.query_metrics(run.id, "answer")
    assert len(per_query) == 3
    for values in per_query.values():
        assert set(values) == {"token_f1", "grounded_refs"}
        assert all(math.isnan(v) or 0.0 <= v <= 1.0 for v in values.values())
    means = db.stage_table(run.id)["answer"]
    assert 0.0 <= means["token_f1"] <= 1.0

    rows = [json.loads(line) for line in (workspace / "results" / run.id / "answers.jsonl").open()]
    assert [r["query_id"] for r in rows] == ["shopapi-001", "shopapi-002", "shopapi-003"]
    for row in rows:
        assert row["rung"] == "where_to_look" and row["input_stage"] == "rrf"
        assert 1 <= len(row["chunks"]) <= 2
        if row["failed"] is None:
            assert isinstance(row["answer"], str) and row["completion_tokens"] > 0
            for ref in row["code_references"]:
                if ref["resolved"] is not None:
                    assert (FIXTURES / "shopapi" / ref["resolved"]).is_file()
        else:
            assert row["answer"] is None and row["metrics"]["token_f1"] is None

    # the stored answers are a predictions file for `rbench eval`
    answers = workspace / "results" / run.id / "answers.jsonl"
    assert main(["eval", str(answers), "--metric", "token_f1", "--json", "--no-store"]) == EXIT_OK
    evaluated = json.loads(capsys.readouterr().out)
    answered = [r for r in rows if r["failed"] is None]
    assert evaluated["metrics"]["token_f1"]["count"] == len(answered)
    if answered:
        assert evaluated["metrics"]["token_f1"]["mean"] == pytest.approx(means["token_f1"])

    # `rbench show` prints the retrieval stages, then the stored answer section
    assert main(["show", run.id]) == EXIT_OK
    shown = capsys.readouterr().out
    retrieval, _, answer_part = shown.partition("answers-real answers")
    assert "\nrrf " in retrieval and "\nanswer " not in retrieval
    assert "\ntoken_f1 " in answer_part and "\ngrounded_refs " in answer_part

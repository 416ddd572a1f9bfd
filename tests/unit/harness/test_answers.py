"""The answer stage wired into a benchmark run (docs/stages.md#answerer): answers stored
in answers.jsonl and under stage ``answer`` in the DB, retrieval numbers unchanged,
and the ``answerer:`` section validated with errors that name the key."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval_bench.config import BenchmarkConfig, load_config, parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.answers.dataset import DEFAULT_ANSWER_METRICS
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.llm.base import ChatRequest, LLMUnavailableError
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.fakes.llm import ScriptedLLM, last_user

REPO = {
    "shop/orders.py": "def list_orders(db):\n    return db.query('orders')\n",
    "shop/pricing.py": (
        "BULK_RATE = 5\n\n\ndef bulk_discount(qty):\n    return BULK_RATE if qty > 9 else 0\n"
    ),
    "README.md": "# shop\n\nA tiny shop.\n",
}
QUESTIONS = [
    {
        "id": "q1",
        "query": "Where are orders listed?",
        "gold_files": ["shop/orders.py"],
        "reference_answer": "list_orders in shop/orders.py",
    },
    {
        "id": "q2",
        "query": "How is the bulk discount computed?",
        "gold_files": ["shop/pricing.py"],
        "reference_answer": "bulk_discount returns BULK_RATE for 10 or more",
    },
    {
        "id": "q3",
        "query": "boom: what explodes?",
        "gold_files": ["README.md"],
        "reference_answer": "nothing",
    },
]
REPLIES = {
    "Where are orders listed?": "list_orders in shop/orders.py",  # token F1 1.0
    "How is the bulk discount computed?": "See shop/pricing.py:4-5 and shop/nowhere.py.",
}


class FakeClient(ScriptedLLM):
    """The scripted model with the attributes the runner's provenance reads."""

    settings = SimpleNamespace(base_url="scripted://")


def script(request: ChatRequest) -> str | Exception:
    user = last_user(request)
    if "Predicted Answer:" in user:
        return "4"  # the LLM judge's rating
    if "boom" in user:
        return LLMUnavailableError("model server unreachable")
    return next(reply for question, reply in REPLIES.items() if f"Question: {question}" in user)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for path, text in REPO.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    lines = "\n".join(json.dumps(q) for q in QUESTIONS) + "\n"
    (tmp_path / "questions.jsonl").write_text(lines)
    return tmp_path


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[FakeClient]:
    made: list[FakeClient] = []

    def make_llm(*_args: Any) -> FakeClient:
        made.append(FakeClient(script))
        return made[-1]

    monkeypatch.setattr("retrieval_bench.llm.factory.make_llm", make_llm)
    return made


def config(base: Path, **extra: Any) -> BenchmarkConfig:
    data = {
        "name": "tiny",
        "datasets": [{"name": "tiny", "questions": "questions.jsonl", "snapshot": "repo"}],
        "retrievers": [{"name": "bm25"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 2,
        "metrics": {"ks": [1, 2], "budgets": [1000]},
        **extra,
    }
    return parse_config(data, "tiny.yaml", base)


def run(base: Path, home: str, **extra: Any) -> BenchmarkResult:
    return run_benchmark(config(base, **extra), Workspace(base / home))


ANSWERER = {"rung": "instructions", "k": 2, "max_tokens": 50}


def test_answers_are_scored_stored_and_reported(repo: Path, clients: list[FakeClient]) -> None:
    result = run(repo, "h", answerer=ANSWERER, answer_metrics=["token_f1", "exact_match"])
    assert len(clients) == 1  # one lazily made client for the whole run
    # q1 answers the reference exactly; q2 shares no token with its reference; q3 failed
    f1 = result.answers["token_f1"]
    assert (f1["mean"], f1["count"], f1["missing"]) == (0.5, 2, 1)
    assert f1["ci_low"] == 0.0 and f1["ci_high"] == 1.0
    assert result.answers["exact_match"]["mean"] == 0.5
    section = result.answer_stage
    assert section is not None and section.input == "rrf"
    assert section.llm_stats()["answer_calls"] == 2 and section.llm_stats()["failures"] == 1

    assert result.out_dir is not None
    rows = [json.loads(line) for line in (result.out_dir / "answers.jsonl").open()]
    assert [r["query_id"] for r in rows] == ["q1", "q2", "q3"]
    q1, q2, q3 = rows
    assert q1["answer"] == "list_orders in shop/orders.py" and q1["failed"] is None
    assert q1["rung"] == "instructions" and q1["input_stage"] == "rrf"
    assert q1["chunks"][0]["path"] == "shop/orders.py" and len(q1["chunks"]) <= 2
    assert q1["metrics"] == {"token_f1": 1.0, "exact_match": 1.0}
    refs = {r["path"]: r for r in q2["code_references"]}
    assert refs["shop/pricing.py"]["exists"] and refs["shop/pricing.py"]["lines_exist"]
    assert refs["shop/nowhere.py"]["exists"] is False
    assert "](file://" in q2["answer_linked"]
    assert q3["answer"] is None and q3["metrics"] == {"token_f1": None, "exact_match": None}
    assert q3["failed"] == "LLM call failed: model server unreachable"

    db = ResultsDB(Workspace(repo / "h").db_path)
    stages = db.stages(result.run_id)
    assert [s.stage for s in stages] == ["bm25", "rrf", "answer"]
    answer = stages[-1]
    assert answer.parent == "rrf" and answer.llm_calls == 2 and answer.n_failures == 1
    row = db.stage_table(result.run_id)["answer"]
    assert row["token_f1"] == 0.5 and row["token_f1_ci_high"] == 1.0
    assert row["failed"] == pytest.approx(1 / 3)
    per_query = db.query_metrics(result.run_id, "answer")
    assert per_query["q1"] == {"token_f1": 1.0, "exact_match": 1.0}
    assert math.isnan(per_query["q3"]["token_f1"])
    reasons = {q: r for _, q, r in db.failures(result.run_id, "answer")}
    assert reasons == {"q3": "no answer: LLM call failed: model server unreachable"}
    assert db.get_run(result.run_id).status == "done"


def test_the_answer_stage_changes_no_retrieval_number(
    repo: Path, clients: list[FakeClient]
) -> None:
    without = run(repo, "a")
    with_answers = run(repo, "b", answerer=ANSWERER, answer_metrics=["token_f1"])
    timing = {"seconds"}  # the only thing that may differ between two runs

    def numbers(result: BenchmarkResult) -> dict[str, Any]:
        return {
            subset: {s: {m: v for m, v in row.items() if m not in timing} for s, row in t.items()}
            for subset, t in result.tables.items()
        }

    assert numbers(with_answers) == numbers(without) and with_answers.counts == without.counts
    assert with_answers.stage_order == without.stage_order == ["bm25", "rrf"]
    assert without.answers == {} and without.answer_stage is None
    assert without.out_dir is not None and not (without.out_dir / "answers.jsonl").exists()
    db_a, db_b = ResultsDB(repo / "a" / "rbench.sqlite"), ResultsDB(repo / "b" / "rbench.sqlite")
    for stage in ("bm25", "rrf"):
        a = db_a.query_metrics(without.run_id, stage)
        b = db_b.query_metrics(with_answers.run_id, stage)
        assert a == b
    assert len(clients) == 1  # the run without an answerer never made a client


def test_default_metrics_and_llm_metrics_count_their_calls(
    repo: Path, clients: list[FakeClient]
) -> None:
    result = run(repo, "h", answerer=ANSWERER)
    assert list(result.answers) == DEFAULT_ANSWER_METRICS
    grounded = result.answers["grounded_refs"]
    # q1 cites shop/orders.py (real); q2 cites a real range and a file that is not there
    assert grounded["count"] == 2 and grounded["mean"] == pytest.approx((1.0 + 0.5) / 2)

    result = run(repo, "j", answerer=ANSWERER, answer_metrics=["llm_judge", "token_f1"])
    assert result.answers["llm_judge"]["mean"] == pytest.approx(0.8)  # "4" → 4/5
    llm = result.answer_stage.llm_stats() if result.answer_stage else {}
    assert (llm["answer_calls"], llm["metric_calls"], llm["calls"]) == (2, 2, 4)


def test_answer_stages_compare_like_eval_runs(repo: Path, clients: list[FakeClient]) -> None:
    from retrieval_bench.harness.compare.runs import compare_runs

    first = run(repo, "h", answerer=ANSWERER, answer_metrics=["token_f1"])
    second = run(repo, "h", answerer={**ANSWERER, "rung": "bare"}, answer_metrics=["token_f1"])
    db = ResultsDB(Workspace(repo / "h").db_path)
    cmp = compare_runs(db, [f"{first.run_id}:answer", f"{second.run_id}:answer"])
    (pair,) = cmp.pairs
    assert (pair.baseline_stage, pair.candidate_stage, pair.n_paired) == ("answer", "answer", 3)
    (row,) = cmp.rows
    assert row.metric == "token_f1" and row.n_pairs == 2 and row.n_dropped == 1  # q3: no value
    assert row.delta == 0.0  # the scripted model answers both rungs alike


def test_no_model_server_fails_the_answers_not_the_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_bench.llm.local_server import LocalServerError

    def make_llm(*_args: Any) -> FakeClient:
        raise LocalServerError("local model server did not answer within 60s")

    monkeypatch.setattr("retrieval_bench.llm.factory.make_llm", make_llm)
    result = run(repo, "h", answerer=ANSWERER, answer_metrics=["token_f1", "llm_judge"])
    assert result.answers["token_f1"]["count"] == 0 and result.answers["token_f1"]["missing"] == 3
    assert result.tables["all"]["rrf"]["R@2"] > 0  # retrieval still scored
    db = ResultsDB(Workspace(repo / "h").db_path)
    reasons = {q: r for _, q, r in db.failures(result.run_id, "answer")}
    assert reasons["q1"] == (
        "no answer: answerer failed: LocalServerError: local model server did not answer within 60s"
    )
    assert db.get_run(result.run_id).status == "done"


def test_rbench_run_prints_and_emits_the_answer_section(
    repo: Path, clients: list[FakeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    from retrieval_bench.cli import EXIT_OK, main

    data = config(repo, answerer=ANSWERER, answer_metrics=["token_f1"]).model_dump(mode="json")
    path = repo / "bench.json"
    path.write_text(json.dumps(data))
    home = str(repo / "h")
    assert main(["--workspace", home, "run", str(path)]) == EXIT_OK
    out = capsys.readouterr().out
    section = out[out.index("tiny answers") :].splitlines()
    assert section[:5] == [
        "tiny answers (rung instructions, top 2 chunks of rrf; 3 questions, 1 without an answer)",
        "metric     mean          95% CI  count  missing",
        "--------  -----  --------------  -----  -------",
        "token_f1  0.500  [0.000, 1.000]      2        1",
        "answer stage LLM: 2 calls (answers 2, metrics 0), 0 tokens, 0 cache hits, 1 failed; "
        + section[4].rsplit("; ", 1)[1],
    ]
    assert section[5] == (
        "file references: 3 cited, 2 exist in the repository (0 ambiguous), 2 shown to the "
        "model; line ranges 1/1 valid; 0 symbol-only"
    )
    assert out.index("tiny [all]") < out.index("tiny answers") < out.index("stored in")

    assert main(["--workspace", home, "run", str(path), "--json"]) == EXIT_OK
    answers = json.loads(capsys.readouterr().out)["answers"]
    assert answers["metrics"]["token_f1"]["mean"] == 0.5
    assert (answers["questions"], answers["failed"], answers["input"]) == (3, 1, "rrf")
    assert answers["llm"]["answer_calls"] == 2


# -- config -----------------------------------------------------------------------------
BASE: dict[str, Any] = {
    "name": "t",
    "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "r"}],
    "retrievers": [{"name": "bm25"}, {"name": "dense"}],
    "fusions": [{"name": "rrf"}],
}


def test_answerer_defaults_and_input() -> None:
    cfg = parse_config({**BASE, "answerer": {}})
    assert cfg.answerer is not None and cfg.answerer.rung == "instructions"
    assert (cfg.answerer.k, cfg.answerer.max_context_tokens, cfg.answerer.max_tokens) == (
        5,
        3000,
        384,
    )
    assert cfg.answer_input() == "rrf"  # last fusion
    with_reranker = {**BASE, "rerankers": [{"name": "llm-yesno"}], "answerer": {}}
    assert parse_config(with_reranker).answer_input() == "llm-yesno"
    assert parse_config({**BASE, "fusions": [], "answerer": {}}).answer_input() == "dense"
    assert parse_config({**BASE, "answerer": {"input": "bm25"}}).answer_input() == "bm25"


def test_config_without_answerer_keeps_its_fingerprint() -> None:
    plain = parse_config(BASE)
    assert "answerer" not in json.dumps(plain.model_dump(mode="json", exclude_none=True))
    assert parse_config(BASE).fingerprint() == plain.fingerprint()
    assert parse_config({**BASE, "answerer": {}}).fingerprint() != plain.fingerprint()


@pytest.mark.parametrize(
    ("answerer", "needle"),
    [
        (
            {"rung": "fancy"},
            "answerer.rung: Value error, unknown rung 'fancy'; choose one of: bare",
        ),
        ({"input": "rerank"}, "answerer.input: 'rerank' is not a stage label; choose one of: bm25"),
        ({"k": 0}, "answerer.k: Input should be greater than 0"),
        ({"max_context_tokens": -5}, "answerer.max_context_tokens: Input should be greater"),
        ({"temperature": -1}, "answerer.temperature: Input should be greater than or equal"),
        ({"style": "short"}, "answerer.style: Extra inputs are not permitted"),
    ],
)
def test_bad_answerer_sections_name_the_key(answerer: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "answerer": answerer}, "bench.yaml")
    assert needle in str(info.value) and str(info.value).startswith("bench.yaml: ")


def test_answer_is_a_reserved_stage_label_with_or_without_an_answerer() -> None:
    """It used to be refused only beside an ``answerer:`` section; the web views and
    stored tables treat the label as the answerer's whatever the config."""
    data = {**BASE, "fusions": [{"name": "rrf", "id": "answer"}]}
    for config in (data, {**data, "answerer": {}}):
        with pytest.raises(ConfigError) as info:
            parse_config(config, "bench.yaml")
        assert str(info.value) == (
            "bench.yaml: (top level): Value error, stage label 'answer' is reserved for the "
            "answerer's results; give that stage another 'id'"
        )


def test_answer_metrics_without_an_answerer(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(json.dumps({**BASE, "answer_metrics": ["token_f1"]}))
    with pytest.raises(ConfigError) as info:
        load_config(path, tmp_path)
    assert str(info.value) == (
        f"{path}: answer_metrics need an answerer: section (e.g. answerer: "
        "{rung: instructions}), or remove answer_metrics"
    )
    cfg = parse_config({**BASE, "answer_metrics": ["token_f1"]})  # rbench eval --config reads it
    with pytest.raises(ConfigError, match="answer_metrics need an answerer"):
        run_benchmark(cfg, Workspace(tmp_path / "h"))
    path.write_text(json.dumps({**BASE, "answer_metrics": ["token_f1"], "answerer": {}}))
    assert load_config(path, tmp_path).answerer is not None


def test_unknown_answer_metric_fails_before_any_work(tmp_path: Path) -> None:
    cfg = parse_config({**BASE, "answerer": {}, "answer_metrics": ["no_such_metric"]})
    with pytest.raises(ConfigError, match="unknown metric 'no_such_metric'"):
        run_benchmark(cfg, Workspace(tmp_path / "h"))
    assert not (tmp_path / "h" / "rbench.sqlite").exists()


def test_the_shipped_answers_config_is_valid() -> None:
    root = Path(__file__).resolve().parents[3]
    cfg = load_config(root / "benchmarks" / "configs" / "fixtures-answers.yaml")
    assert cfg.answerer is not None and cfg.answerer.rung == "instructions"
    assert cfg.answer_input() == "rrf"
    assert [m.label for m in cfg.answer_metrics][:4] == [
        "token_f1",
        "rougeL",
        "bleu",
        "grounded_refs",
    ]

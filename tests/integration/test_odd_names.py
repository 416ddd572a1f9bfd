"""A repository whose folder and file names hold spaces, ``%`` and non-ASCII letters,
and query ids with spaces: every retriever indexes, finds, stores and round-trips them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.store.trec import read_run
from tests.integration.conftest import write_jsonl

pytestmark = pytest.mark.integration

FILES = {
    "my file.py": "def parse_invoice_total(invoice):\n    return sum(invoice.lines)\n",
    "ünïcode.py": "def render_greeting_banner(name):\n    return f'Grüß dich, {name}'\n",
    "dir with space/x.py": "def compute_shipping_rate(parcel):\n    return parcel.kg * 3\n",
    "pct 100%.py": "def percent_complete_ratio(done, total):\n    return done / total\n",
}
QUESTIONS = {  # query id → (question, gold file)
    "q1": ("where is parse_invoice_total defined?", "my file.py"),
    "q two": ("which function is render_greeting_banner?", "ünïcode.py"),
    "q-ü\tthree": ("compute_shipping_rate for a parcel", "dir with space/x.py"),
    "100%": ("how is percent_complete_ratio computed?", "pct 100%.py"),
}
NO_LLM_RETRIEVERS: list[dict[str, Any]] = [
    {"name": "dense"},
    {"name": "bm25"},
    {"name": "exact", "terms": "identifiers"},
    {"name": "fuzzy"},
]


@pytest.fixture
def odd_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "wëird repo ü"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    return repo


def _run(tmp_path: Path, workspace: Path, repo: Path, stages: dict[str, Any], **extra: Any) -> Path:
    """``rbench run --json`` over the odd repository; returns the run's results folder."""
    q = write_jsonl(
        tmp_path / "questions.jsonl",
        [{"id": i, "query": text, "gold_files": [gold]} for i, (text, gold) in QUESTIONS.items()],
    )
    cfg = {
        "name": "odd names",
        "datasets": [{"name": "odd", "questions": str(q), "snapshot": str(repo)}],
        "table_k": 3,
        **stages,
        **extra,
    }
    (tmp_path / "c.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["run", str(tmp_path / "c.yaml"), "--json"]) == EXIT_OK
    return workspace / "results"


def _check_stored_run(results: Path, stages: list[str], must_find: list[str]) -> None:
    """TREC files decode to the query ids and chunk ids of the repository, and the
    ``must_find`` stages rank each question's gold file first."""
    (run_dir,) = results.iterdir()
    drill = [json.loads(line) for line in (run_dir / "queries.jsonl").read_text().splitlines()]
    assert {d["query_id"] for d in drill} == set(QUESTIONS)
    for d in drill:
        assert d["missing_gold"] == [] and d["gold_files"] == [QUESTIONS[d["query_id"]][1]]
        for stage in must_find:
            assert d["stages"][stage]["files"][0] == d["gold_files"][0], (stage, d)
    for stage in stages:
        trec = run_dir / "runs" / "odd" / f"{stage}.trec"
        lines = trec.read_text(encoding="utf-8").splitlines()
        assert lines and all(len(line.split()) == 6 for line in lines)
        run = read_run(trec)
        assert run.name == stage and set(run.query_ids()) <= set(QUESTIONS)
        for qid in run.query_ids():
            for chunk_id, _score in run.ranked(qid):
                assert chunk_id.rsplit(":", 2)[0] in FILES, chunk_id
        for qid in QUESTIONS if stage in must_find else ():
            top_id, _ = run.ranked(qid)[0]
            assert top_id.startswith(QUESTIONS[qid][1] + ":")


def test_every_retriever_over_odd_names(
    tmp_path: Path, workspace: Path, odd_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stages = {"retrievers": NO_LLM_RETRIEVERS, "fusions": [{"name": "rrf"}]}
    results = _run(tmp_path, workspace, odd_repo, stages)
    assert capsys.readouterr().err.count("warning") == 0
    names = ["dense", "bm25", "exact", "fuzzy"]
    _check_stored_run(results, [*names, "rrf"], must_find=[*names, "rrf"])
    (index_manifest,) = (workspace / "indexes").glob("*.manifest.json")
    assert index_manifest.name.startswith("weird-repo-u-")


def test_index_and_query_odd_names(
    workspace: Path, odd_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(odd_repo)]) == EXIT_OK
    assert "index of" in capsys.readouterr().out
    for spec in NO_LLM_RETRIEVERS:
        for qid, (question, gold) in QUESTIONS.items():
            args = ["query", str(odd_repo), question, "--retriever", spec["name"], "--json"]
            assert main(args) == EXIT_OK, (spec, qid)
            hits = json.loads(capsys.readouterr().out)
            assert hits and hits[0]["path"] == gold, (spec, qid, hits)


def test_llm_retrievers_over_odd_names(
    tmp_path: Path,
    workspace: Path,
    odd_repo: Path,
    llm_server: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """hyde and exact's ``terms: llm`` rung with the real local model: they run and
    store their runs (SmolLM2-135M is too weak to assert what it finds)."""
    stages = {
        "retrievers": [
            {"name": "bm25"},
            {"name": "hyde", "rung": "plain", "max_tokens": 48},
            {"name": "exact", "id": "exact-llm", "terms": "llm"},
        ],
        "fusions": [{"name": "rrf"}],
    }
    results = _run(tmp_path, workspace, odd_repo, stages, llm={"base_url": llm_server.base_url})
    capsys.readouterr()
    _check_stored_run(results, ["bm25", "hyde", "rrf"], must_find=["bm25"])
    (run_dir,) = results.iterdir()
    assert not (run_dir / "artifacts" / "odd" / "hyde.jsonl").exists() or all(
        "failed" not in json.loads(line)
        for line in (run_dir / "artifacts" / "odd" / "hyde.jsonl").read_text().splitlines()
    )

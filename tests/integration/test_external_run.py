"""An external system's ranked files as a stage of ``rbench run``, next to bm25,
fused by rrf, stored, and compared with ``rbench compare`` like any stage
(docs/stages.md#external)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.datasets.jsonl import load_examples
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.trec import encode_id
from tests.integration.conftest import FIXTURES

pytestmark = pytest.mark.integration

SHOP = FIXTURES / "shopapi"


def _config(tmp_path: Path, external: dict[str, object]) -> Path:
    cfg = {
        "name": "ext",
        "datasets": [
            {"name": "shopapi", "questions": str(SHOP / "questions.jsonl"), "snapshot": str(SHOP)}
        ],
        "retrievers": [{"name": "bm25"}, {"name": "external", **external}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }
    path = tmp_path / "ext.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _system_run(path: Path) -> None:
    """A made-up system: a file we do not have first, then the gold, then the Makefile."""
    lines = []
    for ex in load_examples(SHOP / "questions.jsonl").examples[:-1]:
        ranked = dict.fromkeys(["vendor/not here.py", *ex.gold_files, "Makefile"])
        for rank, doc in enumerate(ranked, start=1):
            lines.append(f"{ex.id} Q0 {encode_id(doc)} {rank} {1.0 / rank} other\n")
    path.write_text("".join(lines), encoding="utf-8")


def test_external_stage_is_run_stored_and_compared(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _system_run(tmp_path / "other.trec")
    cfg = _config(tmp_path, {"path": "other.trec"})  # relative to the config's folder
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    run_id = out["run_id"]
    with ResultsDB(workspace / "rbench.sqlite") as db:
        stages = {s.stage: s for s in db.stages(run_id)}
    assert list(stages) == ["bm25", "external", "rrf"]
    ext = out["tables"]["all"]["external"]
    # every gold file is there, behind one file we lack: R@5 = 1, MRR = 1/2 (but the last query)
    assert ext["R@5"] == pytest.approx(32 / 33) and ext["MRR"] == pytest.approx(16 / 33)
    assert ext["P@1"] == 0.0 and ext["failed"] == pytest.approx(1 / 33)

    # the web UI: the stage table and the drill-down, where the file we lack is listed
    from fastapi.testclient import TestClient

    from retrieval_bench.web.app import create_app
    from retrieval_bench.workspace import Workspace

    client = TestClient(create_app(Workspace(workspace)))
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and "<td>external</td>" in page.text
    drill = client.get(f"/runs/{run_id}/queries/shopapi-001")
    assert drill.status_code == 200 and "vendor/not here.py" in drill.text

    assert main(["compare", f"{run_id}:external", f"{run_id}:bm25"]) == EXIT_OK
    text = capsys.readouterr().out
    print(text, file=sys.stderr)  # shown with -s or on failure
    assert "external→bm25" in text
    assert any(line.startswith(f"{run_id}  external→bm25 ") for line in text.splitlines())


def test_bad_external_file_fails_that_stage_only(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    (tmp_path / "broken.jsonl").write_text('{"instance_id": "shopapi-001"\n', encoding="utf-8")
    cfg = _config(tmp_path, {"path": "broken.jsonl"})
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    run_id = out["run_id"]
    assert any("broken.jsonl:1: not valid JSON" in r.getMessage() for r in caplog.records)
    assert out["tables"]["all"]["external"]["failed"] == 1.0  # every query, with the reason
    assert out["tables"]["all"]["bm25"]["failed"] == 0.0
    with ResultsDB(workspace / "rbench.sqlite") as db:
        assert [s.stage for s in db.stages(run_id)] == ["bm25", "external", "rrf"]

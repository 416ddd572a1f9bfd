"""A run is recorded — its ``runs`` row and ``run.json``, status ``running`` —
before its first work, so a run stopped while its first snapshot is chunked and
indexed is still there, and ``rbench run --resume`` continues it
(docs/architecture.md#executors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.harness.run import prepare as pipeline
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES, write_config

pytestmark = pytest.mark.integration


def test_a_run_stopped_in_its_first_index_build_is_recorded_and_resumes(
    tmp_path: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shop = FIXTURES / "shopapi"
    dataset = {"name": "shop", "questions": str(shop / "questions.jsonl"), "snapshot": str(shop)}
    config = write_config(tmp_path / "c.json", [dataset], ["bm25"])
    db_path = Workspace(workspace).db_path
    seen: list[dict[str, Any]] = []
    real = pipeline.build_corpus

    def stopped(*args: Any, **kwargs: Any) -> Any:
        """The first index build: what is stored at that moment, then Ctrl-C."""
        runs = ResultsDB(db_path).list_runs() if db_path.exists() else []
        files = sorted(Workspace(workspace).results_dir.glob("*/run.json"))
        seen.append({"runs": [(r.id, r.status, r.name) for r in runs],
                     "run_json": [json.loads(f.read_text())["run"] for f in files]})  # fmt: skip
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "build_corpus", stopped)
    assert main(["run", str(config)]) == 130  # Ctrl-C
    assert "interrupted" in capsys.readouterr().err
    ((run_id, status, name),) = seen[0]["runs"]
    assert (status, name) == ("running", "t")
    (stored,) = seen[0]["run_json"]
    assert (stored["id"], stored["status"]) == (run_id, "running")
    assert ResultsDB(db_path).get_run(run_id).status == "interrupted"

    monkeypatch.setattr(pipeline, "build_corpus", real)
    assert main(["run", str(config), "--json", "--resume"]) == EXIT_OK
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["run_id"] == run_id and resumed["counts"]["all"] > 0
    run = ResultsDB(db_path).get_run(run_id)
    assert run.status == "done" and run.dataset_fingerprint
    assert run.provenance["datasets"]["shop"]["n_examples"] == resumed["counts"]["all"]

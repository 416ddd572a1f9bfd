"""What the CLI prints: progress without a terminal, the index summary, ``-k`` and
the table formats of ``run``/``show`` (real fixture repos, real files)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import FIXTURES, REPO_ROOT

pytestmark = pytest.mark.integration


def test_index_without_a_terminal_logs_counts_and_prints_a_summary(
    tmp_path: Path, workspace: Path
) -> None:
    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    env = {**os.environ, "RBENCH_PROGRESS_INTERVAL": "0", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "retrieval_bench.cli", "index", str(repo)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert done.returncode == EXIT_OK, done.stderr
    err = done.stderr.splitlines()  # a pipe, not a terminal: plain lines, no bar
    files = [line for line in err if line.startswith("index shopapi: ") and " files " in line]
    n = int(re.search(r"/(\d+) files", files[0]).group(1))  # type: ignore[union-attr]
    assert files[0] == f"index shopapi: 0/{n} files (0%)"
    assert any(line.startswith(f"index shopapi: {n // 2}/{n} files (") for line in files)
    assert re.fullmatch(rf"index shopapi: {n}/{n} files \(100%\), \d+\.\ds", files[-1])
    embedded = [line for line in err if "chunks embedded" in line]
    assert embedded[0].startswith("index shopapi: 0/") and "(100%)" in embedded[-1]
    out = done.stdout
    assert "BuildStats(" not in out
    assert f"files:  {n} seen, {n} chunked ({n} new, 0 changed), 0 unchanged, 0 removed" in out
    assert re.search(r"chunks: \d+ in the index, 0 reused from the previous index", out)
    assert re.search(r"embeddings: \d+ new texts, \d+ computed by the model, \d+ from the", out)
    assert re.search(r"build took \d+\.\ds", out)

    again = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env)
    assert again.returncode == EXIT_OK and again.stderr == ""  # --json: no progress
    stats = json.loads(again.stdout)
    assert stats["mode"] == "update" and stats["files_unchanged"] == n
    assert stats["texts_embedded"] == 0 and stats["chunks"] == stats["chunks_reused"]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    shop = FIXTURES / "shopapi"
    cfg = {
        "name": "shop",
        "datasets": [{"name": "shopapi", "questions": str(shop / "questions.jsonl"),
                      "snapshot": str(shop), "limit": 6}],
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
        "metrics": {"ks": [1, 5]},
    }  # fmt: skip
    path = tmp_path / "shop.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _run_id(err: str) -> str:
    match = re.search(r"run (\S+) stored in", err)
    assert match, err
    return match.group(1)


def test_run_k_format_and_stage_lines_then_show(
    config: Path,
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RBENCH_PROGRESS_INTERVAL", "0")
    assert main(["run", str(config), "-k", "3", "--format", "csv"]) == EXIT_OK
    captured = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(captured.out)))  # stdout is the CSV alone
    assert [(r["subset"], r["stage"]) for r in rows][:3] == [
        ("all", "bm25"), ("all", "exact"), ("all", "rrf"),
    ]  # fmt: skip
    assert {"P@3", "R@3", "F1@3", "nDCG@3", "lost", "seconds"} <= set(rows[0])
    assert 0.0 <= float(rows[0]["R@3"]) <= 1.0
    err = captured.err.splitlines()
    assert "shopapi: 6 questions" in err[0]
    for stage in ("bm25", "exact", "rrf"):  # one line per stage, with its time
        assert any(re.fullmatch(rf"\[shopapi\] {stage}  \d+\.\ds", line) for line in err), err
    run_id = _run_id(captured.err)

    assert main(["show", run_id, "-k", "3"]) == EXIT_OK  # -k 3 was added to the ks
    out = capsys.readouterr().out
    assert "k=3" in out and "P@3" in out
    assert main(["show", run_id, "-k", "7"]) == EXIT_BAD_INPUT
    assert f"run {run_id} has no metrics at k=7; it computed k = 1, 3, 5" in (
        capsys.readouterr().err
    )
    target = tmp_path / "table.md"
    assert main(["show", run_id, "--format", "markdown", "--out", str(target)]) == EXIT_OK
    lines = target.read_text().splitlines()
    assert lines[0].startswith("**shop [all] run ") and lines[0].endswith(" k=3**")
    assert lines[2].startswith("| stage | P@3 | R@3 |") and lines[3].startswith("|:---|---:|")
    assert [line.split(" | ")[0] for line in lines[4:7]] == ["| bm25", "| exact", "| rrf"]
    assert lines[2].endswith(" | ΔR@3 vs bm25 | p |")  # paired columns: R@table_k (-k 3)
    assert lines[7] == "" and lines[8].startswith("Δ, p: R@3 per query paired with bm25")
    assert capsys.readouterr().out == ""  # --out: nothing on stdout
    assert main(["show", run_id, "--format", "csv", "-k", "1"]) == EXIT_OK
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["stage"] for r in table] == ["bm25", "exact", "rrf"] and "P@1" in table[0]
    # the paired column follows -k (docs/metrics.md#paired-columns-of-the-per-stage-table)
    assert list(table[0])[-4:] == ["ΔR@1 vs bm25", "p", "pairs", "worse_than_input"]

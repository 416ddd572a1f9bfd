"""A dataset name or stage id that is a path stops the run before any work, and
nothing is written outside the workspace (docs/configuration.md#names-and-labels)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, main

pytestmark = pytest.mark.integration


def test_traversal_names_exit_2_and_write_nothing(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pay.py").write_text("def handle_payment(order):\n    return order.total\n")
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q1", "query": "charge a payment", "gold_files": ["pay.py"]}\n')
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    cfg = deep / "trav.yaml"
    cfg.write_text(
        f"name: trav\n"
        f'datasets: [{{name: "../../../../../travDS", questions: {q}, snapshot: {repo}}}]\n'
        f"chunker: {{name: ast, budget: 512}}\n"
        f'retrievers: [{{name: bm25, id: "../../../../../../travSTAGE"}}]\n'
    )
    before = set(tmp_path.rglob("*"))
    assert main(["--workspace", str(deep / "ws"), "run", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a valid name" in err, err
    workspace_files = {deep / "ws", *(deep / "ws").rglob("*")}
    assert set(tmp_path.rglob("*")) - before <= workspace_files
    assert not list(tmp_path.rglob("trav*.trec")) and not list(tmp_path.rglob("travDS"))

"""``rbench sweep`` as a user meets it (issue 19 item 16): every cell announced with
its count and label, every stage line under its cell's label; ``--limit N`` as
``rbench run`` has it; ``rbench run`` on a sweep config says to use ``rbench sweep``.
A real sweep over the shopapi fixture (lexical stages only: seconds)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import FIXTURES

pytestmark = pytest.mark.integration

LABELS = [
    "chunker.budget=128 fusions.rrf.k_rrf=10",
    "chunker.budget=128 fusions.rrf.k_rrf=60",
    "chunker.budget=512 fusions.rrf.k_rrf=10",
    "chunker.budget=512 fusions.rrf.k_rrf=60",
]


def _config(tmp_path: Path) -> Path:
    shop = FIXTURES / "shopapi"
    cfg = {
        "name": "shop-sweep",
        "datasets": [{"name": "shopapi", "questions": str(shop / "questions.jsonl"),
                      "snapshot": str(shop), "hash_split": 0.5}],
        "chunker": {"name": "ast", "budget": 512},
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf", "k_rrf": 60}],
        "sweep": {"grid": {"chunker.budget": [128, 512], "fusions.rrf.k_rrf": [10, 60]}},
    }  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def test_progress_names_each_cell_and_limit_cuts_each_split(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("RBENCH_PROGRESS_INTERVAL", "0")
    assert main(["sweep", str(_config(tmp_path)), "--limit", "3"]) == EXIT_OK
    err = capsys.readouterr().err.splitlines()

    announced = [line for line in err if line.startswith("sweep select [shopapi]: cell ")]
    assert [re.sub(r", eta \w+", "", line) for line in announced] == [
        f"sweep select [shopapi]: cell {i}/4: {label}" for i, label in enumerate(LABELS, 1)
    ]
    assert all(", eta " in line for line in announced[1:])
    stage_lines = [line for line in err if "[shopapi] " in line and "sweep " not in line]
    assert stage_lines, err
    for line in stage_lines:  # `[shopapi] rrf  0.0s` always says whose it is
        label, sep, rest = line.partition(": [shopapi] ")
        assert sep and rest and label in [*LABELS, "default (the base config)"], line
    report = [line for line in err if line.startswith("sweep report [shopapi]: cell ")]
    assert len(report) == 2 and report[1].endswith(": default (the base config)")

    (stored,) = [line for line in err if line.startswith("sweep ") and " stored " in line]
    sweep_id = stored.split()[1]
    assert main(["sweeps", sweep_id, "--json"]) == EXIT_OK
    sweep = json.loads(capsys.readouterr().out)
    assert {c["n"] for c in sweep["cells"]} == {3}  # the first 3 dev questions
    assert {r["n"] for r in sweep["report"]} == {3}  # and the first 3 test ones


def test_run_on_a_sweep_config_says_use_sweep(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    assert main(["run", str(config)]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == (
        f"rbench: error: {config} is a sweep config: use rbench sweep {config}\n"
    )

"""A sweep over per-question snapshots runs on the process pool with the same ranked
table and stored results as in this process (docs/sweeps.md, docs/architecture.md#executors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_bench.cli import main
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.sweeps import get_sweep
from retrieval_bench.workspace import Workspace
from tests.integration.test_executors import history  # noqa: F401 - the fixture
from tests.unit.datasets.gitrepo import needs_git

pytestmark = needs_git


def _sweep_config(history: Path) -> Path:  # noqa: F811 - the fixture's value
    cfg = json.loads(history.read_text())
    cfg["datasets"][0]["hash_split"] = 0.5
    cfg["sweep"] = {"grid": {"chunker.budget": [64, 128], "fusions.rrf.k_rrf": [10, 60]},
                    "objective": "MRR"}  # fmt: skip
    path = history.parent / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _cells(home: Path, sweep_id: str) -> list[tuple[Any, ...]]:
    db = ResultsDB(Workspace(home).db_path)
    out = []
    for c in get_sweep(db, sweep_id).cells:
        # rank breaks equal means by measured seconds (docs/sweeps.md), so it is timing
        # and is compared apart (below), like the seconds themselves
        row = {k: v for k, v in c.row.items() if k not in ("seconds", "chunk_seconds", "rank")}
        metrics = db.query_metrics(c.run_id, "rrf") if c.run_id else {}
        out.append((c.cell, c.split, c.label, c.status, json.dumps(row, sort_keys=True), metrics))
    return out


def test_a_sweep_on_the_process_pool_equals_the_serial_one(
    history: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _sweep_config(history)
    ids = {}
    for name, extra in (("serial", []), ("pool", ["--jobs", "2"])):
        code = main(["--workspace", str(tmp_path / name), "sweep", str(config), "--json", *extra])
        out, err = capsys.readouterr()
        assert code == 0, err
        ids[name] = json.loads(out)["sweep_id"]
    serial = _cells(tmp_path / "serial", ids["serial"])
    assert len([c for c in serial if c[1].startswith("select")]) == 4
    assert all(c[3] == "done" and c[5] for c in serial)
    pool = _cells(tmp_path / "pool", ids["pool"])
    select = sorted(c for c in serial if c[1].startswith("select"))
    assert sorted(c for c in pool if c[1].startswith("select")) == select
    # the report phase runs a best-mean cell (which one, among exact ties, is the cheaper
    # as measured) and the base config: the same results whichever tied cell it was
    best = max(json.loads(c[4])["mean"] for c in select)
    tied = {c[2] for c in select if json.loads(c[4])["mean"] == best}

    def reports(cells: list[tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
        return {"base" if c[0] == -1 else "chosen": c for c in cells if c[1].startswith("report")}

    ours, theirs = reports(serial), reports(pool)
    assert set(ours) == set(theirs) == {"base", "chosen"}
    assert ours["base"] == theirs["base"]
    assert {ours["chosen"][2], theirs["chosen"][2]} <= tied
    assert ours["chosen"][3] == theirs["chosen"][3] == "done"
    if ours["chosen"][2] == theirs["chosen"][2]:
        assert ours["chosen"] == theirs["chosen"]

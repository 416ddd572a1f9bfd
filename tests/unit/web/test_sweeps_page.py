"""Sweep pages: the Pareto front (a pure function), then ``/sweeps``,
``/sweeps/{id}`` and ``/api/sweeps/{id}`` over a REAL sweep run by ``rbench sweep``
on the shopapi fixture (6 scored cells, 2 failing ones), and readable pages for
unknown sweeps, sweeps in other states and a damaged database."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import re
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from fastapi.testclient import TestClient  # noqa: E402

from retrieval_bench.store.db import ResultsDB  # noqa: E402
from retrieval_bench.store.sweeps import (  # noqa: E402
    SweepRecord,
    finish_sweep,
    get_sweep,
    record_cell,
    start_sweep,
)
from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.web.sweeps import pareto_front  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import web_client  # noqa: E402
from tests.unit.web.htmltables import Table, tables  # noqa: E402

SHOPAPI = Path(__file__).resolve().parents[3] / "fixtures" / "repos" / "shopapi"

MIX_GRID: dict[str, list[Any]] = {
    "chunker.budget": [128, 512],
    "retrievers.exact.rg_path": [None, "/nonexistent/rg"],  # a missing rg: exact fails
    "fusions": [[], ["rrf"]],  # without rrf the failing exact is the last stage
}
"""8 cells: the 2 whose last stage is the failing exact fail, the other 6 are scored."""


def run_sweep(tmp: Path, grid: dict[str, list[Any]] | None = None) -> tuple[Path, str]:
    """Runs ``rbench sweep`` over the shopapi fixture in ``tmp``; returns (workspace
    folder, sweep id). Set ``RBENCH_CACHE`` before calling."""
    from retrieval_bench.cli import main

    cfg = {
        "name": "shop-sweep",
        "datasets": [{"name": "shopapi", "questions": str(SHOPAPI / "questions.jsonl"),
                      "snapshot": str(SHOPAPI), "hash_split": 0.5}],
        "chunker": {"name": "ast", "budget": 512},
        "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "identifiers"}],
        "fusions": [{"name": "rrf", "k_rrf": 60}],
        "sweep": {"grid": grid or MIX_GRID, "objective": "Acc@5"},
    }  # fmt: skip
    config = tmp / "sweep.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    home = tmp / "home"
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["--workspace", str(home), "sweep", str(config), "--json"])
    assert code == 0
    return home, json.loads(out.getvalue())["sweep_id"]


# ------------------------------------------------------------------ pareto_front


def _brute_force(points: list[tuple[float, float]]) -> set[int]:
    def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])

    return {i for i, p in enumerate(points) if not any(dominates(q, p) for q in points)}


def test_pareto_front_of_a_staircase_is_cheapest_first() -> None:
    points = [(3.0, 0.9), (1.0, 0.5), (2.0, 0.4), (2.0, 0.7), (4.0, 0.9), (0.5, 0.1)]
    # (2, 0.4) loses to (1, 0.5); (4, 0.9) costs more than (3, 0.9) for the same quality
    assert pareto_front(points) == [5, 1, 3, 0]


def test_pareto_front_ties() -> None:
    # same cost: only the better one; same quality: only the cheaper one
    assert pareto_front([(1.0, 0.5), (1.0, 0.7)]) == [1]
    assert pareto_front([(1.0, 0.7), (2.0, 0.7)]) == [0]
    # identical points do not dominate each other: both stay (in input order)
    assert pareto_front([(2.0, 0.8), (1.0, 0.6), (2.0, 0.8)]) == [1, 0, 2]
    # ... or both leave, beaten by a third
    assert pareto_front([(2.0, 0.5), (1.0, 0.6), (2.0, 0.5)]) == [1]


def test_pareto_front_of_one_none_and_all_equal() -> None:
    assert pareto_front([]) == []
    assert pareto_front([(0.3, 0.9)]) == [0]
    assert pareto_front([(0.3, 0.9)] * 4) == [0, 1, 2, 3]


def test_pareto_front_matches_the_definition_on_random_points() -> None:
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 12)
        # few distinct values, so ties in cost, in quality and in both are common
        points = [(float(rng.randint(0, 4)), rng.randint(0, 4) / 4) for _ in range(n)]
        front = pareto_front(points)
        assert set(front) == _brute_force(points), points
        assert [points[i][0] for i in front] == sorted(points[i][0] for i in front)


# --------------------------------------------------------------- pages over a sweep
# (a real sweep: rbench sweep with ripgrep, as the run pages' tests use real runs)
integration = pytest.mark.integration


@dataclasses.dataclass
class Swept:
    ws: Workspace
    sweep: SweepRecord
    client: TestClient


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Swept]:
    tmp = tmp_path_factory.mktemp("web-sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(tmp / "cache"))
        home, sweep_id = run_sweep(tmp)
        ws = Workspace(home)
        with ResultsDB(ws.db_path) as db:
            sweep = get_sweep(db, sweep_id)
        yield Swept(ws, sweep, web_client(create_app(ws), raise_server_exceptions=False))


def _selection(sweep: SweepRecord) -> list[Any]:
    return [c for c in sweep.cells if c.split == "select:dev"]


def _cells_table(swept: Swept) -> tuple[str, Table]:
    resp = swept.client.get(f"/sweeps/{swept.sweep.id}")
    assert resp.status_code == 200
    return resp.text, tables(resp.text)["cells"]


@integration
def test_the_fixture_sweep_has_scored_and_failed_cells(swept: Swept) -> None:
    cells = _selection(swept.sweep)
    assert len(cells) == 8
    assert sum(c.status == "done" for c in cells) == 6
    assert sum(c.status == "failed" for c in cells) == 2


@integration
def test_sweeps_list_links_the_sweep_with_its_summary(swept: Swept) -> None:
    resp = swept.client.get("/sweeps")
    assert resp.status_code == 200
    t = tables(resp.text)["sweeps"]
    assert t.header == ["sweep", "name", "status", "created (UTC)", "cells", "objective",
                        "chosen", "seconds"]  # fmt: skip
    (row,), (links,) = t.rows, t.links
    s = swept.sweep
    assert row[:3] == [s.id, "shop-sweep", "done"] and links == [f"/sweeps/{s.id}"]
    assert row[4:7] == ["8", "Acc@5", s.summary["chosen_label"]]
    assert row[7] == f"{s.summary['seconds']:.2f}"
    # every page's navigation leads here
    assert '<a href="/sweeps">Sweeps</a>' in swept.client.get("/").text


@integration
def test_ranked_table_lists_cells_best_first_and_failed_last(swept: Swept) -> None:
    html, t = _cells_table(swept)
    assert t.header == ["rank", "cell", "Acc@5", "95% CI", "Δ best", "p (Holm)", "n", "seconds",
                        "LLM calls", "tokens", "Pareto", "setting", "run"]  # fmt: skip
    cells = _selection(swept.sweep)
    done = sorted((c for c in cells if c.status == "done"), key=lambda c: c.row["rank"])
    failed = sorted((c for c in cells if c.status != "done"), key=lambda c: c.cell)
    assert [r[1] for r in t.rows] == [str(c.cell) for c in done + failed]
    assert [r[0] for r in t.rows] == [str(i) for i in range(1, 7)] + ["–", "–"]
    means = [c.row["mean"] for c in done]
    assert means == sorted(means, reverse=True)
    for row, links, c in zip(t.rows, t.links, done + failed, strict=True):
        assert links == [f"/runs/{c.run_id}"] and row[-2] == c.label
        if c.status == "done":
            assert row[2] == f"{c.row['mean']:.3f}"
            assert row[3] == f"[{c.row['ci_low']:.3f}, {c.row['ci_high']:.3f}]"
            assert row[6] == str(c.row["n"]) and row[7] == f"{c.row['seconds']:.2f}"
        else:  # the reason spans the numbers' columns
            assert len(row) == 5 and row[2] == f"failed: {c.error}"
            assert "ToolMissingError" in row[2] and "rg_path" in row[2]
    # Δ: "best" for the best mean (the chosen cell and any tie); the reference the others
    # are tested against, the lowest cell number among those, has no p of its own
    best = [c for c in done if c.row["mean"] == means[0]]
    assert [r[4] == "best" for r in t.rows[: len(best)]] == [True] * len(best)
    assert "best" not in [r[4] for r in t.rows[len(best) :]]
    reference = min(best, key=lambda c: c.cell)
    assert next(r for r in t.rows if r[1] == str(reference.cell))[5] == "–"
    chosen = swept.sweep.summary["chosen"]
    assert re.search(f'<tr class="chosen[^"]*" data-cell="{chosen}"', html)
    # a cell's run page opens
    assert swept.client.get(t.links[0][0]).status_code == 200


@integration
def test_pareto_marks_and_chart_follow_pareto_front(swept: Swept) -> None:
    html, t = _cells_table(swept)
    done = [c for c in _selection(swept.sweep) if c.status == "done"]
    points = [(c.row["seconds"], c.row["mean"]) for c in done]
    expected = [done[i].cell for i in pareto_front(points)]
    assert expected  # someone is always on the front
    marked = [int(r[1]) for r in t.rows if len(r) > 5 and r[10] == "◆ front"]
    assert sorted(marked) == sorted(expected)

    svg = html.split('aria-label="quality versus cost"', 1)[1].split("</svg>", 1)[0]
    assert svg.count("<circle") == len(done) == 6  # failed cells are not plotted
    for c in done:
        assert f"<title>cell {c.cell}" in svg and c.label in svg
    assert svg.count('class="point front"') == len(expected)
    line = svg.split('<polyline class="front"', 1)[1].split('points="', 1)[1].split('"', 1)[0]
    assert len(line.split()) == len(expected)
    # the line runs cheapest first
    xs = [float(p.split(",")[0]) for p in line.split()]
    assert xs == sorted(xs)


@integration
def test_report_split_shows_chosen_against_base_config(swept: Swept) -> None:
    html, _ = _cells_table(swept)
    assert "Chosen on dev, scored on test" in html
    t = tables(html)["report"]
    chosen = swept.sweep.summary["chosen"]
    assert [r[0] for r in t.rows] == ["chosen", "base config"]
    assert [r[1] for r in t.rows] == [str(chosen), "-1"]
    assert t.rows[1][-2] == "default (the base config)"
    report = {c.cell: c for c in swept.sweep.cells if c.split == "report:test"}
    for row, links in zip(t.rows, t.links, strict=True):
        c = report[int(row[1])]
        assert row[2] == f"{c.row['mean']:.3f}" and links == [f"/runs/{c.run_id}"]


@integration
def test_work_reused_is_shown(swept: Swept) -> None:
    html, _ = _cells_table(swept)
    work = swept.sweep.summary["work"]
    t = tables(html)["work"]
    assert t.rows == [
        ["chunkings", str(work["chunkings_run"]), str(work["chunkings_reused"])],
        ["stages", str(work["stages_run"]), str(work["stages_reused"])],
    ]
    assert work["stages_reused"] > 0


@integration
def test_api_returns_the_stored_record(swept: Swept) -> None:
    resp = swept.client.get(f"/api/sweeps/{swept.sweep.id}")
    assert resp.status_code == 200
    assert resp.json() == json.loads(json.dumps(dataclasses.asdict(swept.sweep)))
    listed = swept.client.get("/api/sweeps").json()
    assert [s["id"] for s in listed] == [swept.sweep.id]
    assert listed[0]["summary"]["chosen"] == swept.sweep.summary["chosen"]


@integration
def test_unknown_sweep_is_404(swept: Swept) -> None:
    resp = swept.client.get("/sweeps/no-such-sweep")
    assert resp.status_code == 404
    assert "no sweep &#x27;no-such-sweep&#x27;" in resp.text and "What to do" in resp.text
    api = swept.client.get("/api/sweeps/no-such-sweep")
    assert api.status_code == 404 and "no-such-sweep" in api.json()["error"]


# ------------------------------------------------- hand-made sweeps, no benchmark


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "home")


def _client(ws: Workspace) -> TestClient:
    return web_client(create_app(ws), raise_server_exceptions=False)


def test_no_sweeps_yet_and_no_database_created(ws: Workspace) -> None:
    client = _client(ws)
    resp = client.get("/sweeps")
    assert resp.status_code == 200 and "No sweeps stored yet" in resp.text
    assert client.get("/api/sweeps").json() == []
    assert client.get("/sweeps/x").status_code == 404
    assert not ws.db_path.exists()


def test_running_and_failed_sweeps_say_so_and_text_is_escaped(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        running = start_sweep(db, "<b>busy</b>", {}, {"objective": "MRR"})
        failed = start_sweep(db, "broke", {}, {"objective": "Acc@5", "select_on": "dev"})
        record_cell(db, failed, 0, "select:dev", "x=<i>1</i>", {"x": 1}, None, "failed", {},
                    "exact: <no rg>")  # fmt: skip
        finish_sweep(db, failed, "failed", {"seconds": 1.5}, error="ValueError: <boom>")
    client = _client(ws)
    listing = client.get("/sweeps").text
    assert "&lt;b&gt;busy&lt;/b&gt;" in listing and "<b>busy</b>" not in listing
    main = client.get(f"/sweeps/{running}").text.split("<main>", 1)[1]
    assert "still running" in main and "No cells stored yet" in main
    main = client.get(f"/sweeps/{failed}").text.split("<main>", 1)[1]
    assert "status-failed" in main and "ValueError: &lt;boom&gt;" in main
    assert "failed: exact: &lt;no rg&gt;" in main and "x=&lt;i&gt;1&lt;/i&gt;" in main
    assert "No cell was scored" in main and "<svg" not in main


def test_a_damaged_database_is_a_503_page(ws: Workspace) -> None:
    with ResultsDB(ws.db_path) as db:
        start_sweep(db, "a", {}, {})
    ws.db_path.write_bytes(b"this is not a database" * 100)
    client = _client(ws)
    for path in ("/sweeps", "/sweeps/some-sweep"):
        resp = client.get(path)
        assert resp.status_code == 503, (path, resp.text[:300])
        assert str(ws.db_path) in resp.text and "What to do" in resp.text
    for path in ("/api/sweeps", "/api/sweeps/some-sweep"):
        api = client.get(path)
        assert api.status_code == 503 and str(ws.db_path) in api.json()["error"]

"""An external system's ranked files as a stage of ``rbench run``, next to bm25,
fused by rrf, stored, and compared with ``rbench compare`` like any stage
(docs/stages.md#external)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from retrieval_bench.datasets.jsonl import load_examples
from retrieval_bench.store.db import ResultsDB
from retrieval_bench.store.trec import encode_id
from tests.integration.conftest import FIXTURES
from tests.unit.datasets.gitrepo import GitRepo, needs_git

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
    from retrieval_bench.web.app import create_app
    from retrieval_bench.workspace import Workspace
    from tests.unit.web.conftest import web_client

    client = web_client(create_app(Workspace(workspace)))
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and "<td>external</td>" in page.text
    drill = client.get(f"/runs/{run_id}/queries/shopapi-001")
    assert drill.status_code == 200 and "vendor/not here.py" in drill.text

    assert main(["compare", f"{run_id}:external", f"{run_id}:bm25"]) == EXIT_OK
    text = capsys.readouterr().out
    print(text, file=sys.stderr)  # shown with -s or on failure
    assert "external→bm25" in text
    assert any(line.startswith(f"{run_id}  external→bm25 ") for line in text.splitlines())


@pytest.mark.parametrize(
    ("name", "content", "params", "message"),
    [
        ("absent.trec", None, {}, "absent.trec: no such file"),
        ("bin.trec", b"\xff\xfe\x00garbage\n", {}, "bin.trec: not UTF-8 text"),
        ("broken.jsonl", b'{"instance_id": "shopapi-001"\n', {}, "broken.jsonl:1: not valid JSON"),
        (
            "prefixed.jsonl",  # the ids carry a prefix the config forgot to strip
            b'{"instance_id": "swe__shopapi-001", "found_files": ["a.py"]}\n'
            b'{"instance_id": "swe__shopapi-002", "found_files": ["a.py"]}\n',
            {},
            "none of its 2 query ids is a question searched (file: 'swe__shopapi-001', "
            "'swe__shopapi-002'; dataset: 'shopapi-001', 'shopapi-002', 'shopapi-003', ...); "
            "set strip_prefix or id_map",
        ),
    ],
)
def test_a_bad_external_file_stops_the_run_before_any_work(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | None,
    params: dict[str, object],
    message: str,
) -> None:
    """A stage failing every query would score 0 under a run that says done, exit 0:
    the file is checked first, one line, exit 2, nothing stored, no snapshot read."""
    if content is not None:
        (tmp_path / name).write_bytes(content)
    cfg = _config(tmp_path, {"path": name, **params})
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert err.startswith("rbench: error: retrievers.1 (external): external run "), err
    assert not (workspace / "rbench.sqlite").exists()  # no run recorded
    assert not (workspace / "cache").exists() and not (workspace / "results").exists()


def test_strip_prefix_maps_the_ids_and_the_run_is_done(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"instance_id": f"swe__{ex.id}", "found_files": list(ex.gold_files)}
        for ex in load_examples(SHOP / "questions.jsonl").examples
    ]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    cfg = _config(tmp_path, {"path": "p.jsonl", "strip_prefix": "swe__"})
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["tables"]["all"]["external"]["failed"] == 0.0
    assert out["tables"]["all"]["external"]["R@5"] == 1.0


@needs_git
def test_per_question_snapshots_warn_about_unknown_ids_once_per_run(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three questions at three commits (three snapshots) and an external file with
    a benchmark's worth of rows: the ids are judged against the whole dataset, once;
    a row the dataset has but the run does not search (``limit``) is not a warning."""
    repo = GitRepo(tmp_path / "proj")
    repo.commit("start", {"core/base.py": "def base():\n    pass\n"})
    rows, preds = [], []
    for i in range(4):
        path = f"core/mod{i}.py"
        sha = repo.commit(f"change {i}", {path: f"def handler_{i}():\n    return {i}\n"})
        rows.append({"id": f"q{i}", "query": f"handler {i}", "gold_files": [path], "commit": sha})
        preds.append({"instance_id": f"q{i}", "found_files": [path]})
    preds += [{"instance_id": f"other-{n}", "found_files": ["x.py"]} for n in range(5)]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in preds))
    cfg = {
        "name": "grouped-ext",
        "datasets": [{"name": "proj", "questions": "questions.jsonl", "repo": "org/proj",
                      "limit": 3}],
        "repos": {"org/proj": str(repo.path)},
        "retrievers": [{"name": "bm25"}, {"name": "external", "path": "preds.jsonl"}],
        "table_k": 5,
    }  # fmt: skip
    (tmp_path / "g.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["run", str(tmp_path / "g.yaml"), "--json"]) == EXIT_OK
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith(".external")]
    assert warnings == [
        f"external run {tmp_path / 'preds.jsonl'}: "
        "5 rows for query ids not in the dataset ignored, e.g. 'other-0'"
    ]
    result = json.loads(capsys.readouterr().out)
    assert result["counts"]["all"] == 3 and result["tables"]["all"]["external"]["R@5"] == 1.0
    with ResultsDB(workspace / "rbench.sqlite") as db:
        prov = db.get_run(result["run_id"]).provenance
    assert len(prov["datasets"]["proj"]["snapshot_groups"]) == 3  # one search per snapshot


def test_a_sweep_checks_the_external_file_once_before_any_work(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = json.loads(_config(tmp_path, {"path": "p.jsonl"}).read_text())
    cfg["sweep"] = {"grid": {"fusions.rrf.k_rrf": [10, 30, 60]}, "objective": "Acc@5"}
    (tmp_path / "sweep.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["sweep", str(tmp_path / "sweep.json")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    where = f"external run {tmp_path / 'p.jsonl'}"
    assert err == f"rbench: error: retrievers.1 (external): {where}: no such file"
    assert not (workspace / "rbench.sqlite").exists()

    rows = [{"id": ex.id, "files": list(ex.gold_files)} for ex in
            load_examples(SHOP / "questions.jsonl").examples]  # fmt: skip
    rows.append({"id": "not-a-question", "files": ["a.py"]})
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    assert main(["sweep", str(tmp_path / "sweep.json")]) == EXIT_OK
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith(".external")]
    assert warnings == [  # once for the sweep, not once per cell or split
        f"external run {tmp_path}/p.jsonl: 1 rows for query ids not in the dataset ignored, "
        "e.g. 'not-a-question'"
    ]

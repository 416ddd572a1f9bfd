"""``external``: another system's ranked files (docs/stages.md#external).

Both formats, id mapping, and the bad inputs: a missing or malformed file,
or one whose ids match no question, fails the check made before the run with
one line; unknown query ids and repeated rows are ignored with one warning
each, from that check (``search`` runs once per snapshot and warns nothing);
a query without a row fails with ``no external result``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.retrieval.external import ExternalRun, ExternalRunError
from retrieval_bench.runs.lifting import ranked_files
from retrieval_bench.types import Chunk, Example

QUERIES = {"q1": "where?", "q2": "what?", "q3": "which?"}


def _corpus() -> Corpus:
    def chunk(cid: str, path: str, start: int, end: int) -> Chunk:
        return Chunk(cid, path, start, end, "python", "function", None, "", 10)

    return Corpus(
        root=Path("."),
        chunks=[chunk("a1", "a.py", 1, 10), chunk("a2", "a.py", 11, 20), chunk("b1", "b.py", 1, 5)],
    )


def _stage(path: Path, **params: object) -> ExternalRun:
    stage = RETRIEVERS.create("external", path=str(path), **params)
    assert isinstance(stage, ExternalRun)
    stage.index(_corpus())
    return stage


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_trec_format_ranks_by_score_and_decodes_ids(tmp_path: Path) -> None:
    run_file = tmp_path / "sys.trec"
    run_file.write_text(
        "q1 Q0 b.py 1 0.9 sys\nq1 Q0 a.py 2 0.5 sys\nq1 Q0 my%20dir/x.py 3 0.95 sys\n"
        "q2 Q0 ./a.py 1 3 sys\n",
        encoding="utf-8",
    )
    stage = _stage(run_file)
    run = stage.search(QUERIES, k=10)
    assert run.ids("q1") == ["file:my dir/x.py", "file:b.py", "file:a.py"]
    assert run.ids("q2") == ["file:a.py"]
    assert stage.failures == {"q3": "no external result"}
    assert stage.artifacts == {"q1": {"not_in_snapshot": ["my dir/x.py"]}}
    assert ranked_files(run.ids("q1"), _corpus()) == ["my dir/x.py", "b.py", "a.py"]
    assert stage.search(QUERIES, k=2).ids("q1") == ["file:my dir/x.py", "file:b.py"]


def test_jsonl_found_files_and_scored_files(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "preds.jsonl",
        [
            {"instance_id": "q1", "found_files": ["b.py", "a.py", "gone.py"]},
            {
                "query_id": "q2",
                "files": [{"path": "a.py", "score": 0.2}, {"path": "b.py", "score": 0.7}],
            },
            {"id": "q3", "found_files": []},
        ],
    )
    stage = _stage(path)
    run = stage.search(QUERIES, k=10)
    assert run.ids("q1") == ["file:b.py", "file:a.py", "file:gone.py"]
    assert run.ids("q2") == ["file:b.py", "file:a.py"]
    assert run.scores["q3"] == {} and stage.failures == {}  # it answered, with nothing


def test_id_mapping_prefix_and_map(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "p.jsonl",
        [
            {"instance_id": "swe__q1", "found_files": ["a.py"]},
            {"instance_id": "other-name", "found_files": ["b.py"]},
        ],
    )
    id_map = tmp_path / "map.json"
    id_map.write_text(json.dumps({"other-name": "q2"}), encoding="utf-8")
    run = _stage(path, strip_prefix="swe__", id_map=str(id_map)).search(QUERIES, k=5)
    assert run.ids("q1") == ["file:a.py"] and run.ids("q2") == ["file:b.py"]
    run = _stage(path, id_map={"swe__q1": "q3"}).search(QUERIES, k=5)
    assert run.ids("q3") == ["file:a.py"]
    run = _stage(path, id_map={"swe__q1": 3}).search({"3": "?"}, k=5)  # a YAML number
    assert run.ids("3") == ["file:a.py"]


def test_unknown_ids_and_duplicates_warn_once_before_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _jsonl(
        tmp_path / "p.jsonl",
        [
            {"instance_id": "q1", "found_files": ["a.py", "a.py", "b.py"]},
            {"instance_id": "q1", "found_files": ["b.py"]},
            {"instance_id": "nope-1", "found_files": ["a.py"]},
            {"instance_id": "nope-2", "found_files": ["a.py"]},
            {"instance_id": "q9", "found_files": ["a.py"]},  # a row not selected (limit)
        ],
    )
    with caplog.at_level(logging.WARNING, logger="retrieval_bench.retrieval.external"):
        _stage(path).search(QUERIES, k=5)
        one = _stage(path).search({"q2": "?"}, k=5)  # one snapshot's questions
        assert caplog.records == []  # search warns nothing: it runs once per snapshot
        ExternalRun.check_inputs({"path": str(path)}, set(QUERIES), {*QUERIES, "q9"})
    assert _stage(path).search(QUERIES, k=5).ids("q1") == ["file:a.py", "file:b.py"]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3, messages
    assert "2 repeated rows ignored" in messages[0]
    assert "2 rows for query ids not in the dataset ignored, e.g. 'nope-1'" in messages[1]
    assert "2 of the 3 questions searched have no row" in messages[2]
    assert all("\n" not in m for m in messages)
    assert one.ids("q2") == []

    trec = tmp_path / "dup.trec"
    trec.write_text("q1 Q0 a.py 1 0.2 s\nq1 Q0 a.py 2 0.9 s\nq1 Q0 b.py 3 0.5 s\n", "utf-8")
    run = _stage(trec).search(QUERIES, k=5)
    assert run.scores["q1"] == {"file:a.py": 0.9, "file:b.py": 0.5}  # the best score kept


def test_no_matching_id_names_the_first_ids_of_each_side(tmp_path: Path) -> None:
    rows = [{"instance_id": f"swe__q{i}", "found_files": ["a.py"]} for i in (1, 2, 3, 4)]
    path = _jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(ExternalRunError) as err:
        ExternalRun.check_inputs({"path": str(path)}, set(QUERIES), set(QUERIES))
    assert str(err.value) == (
        f"external run {path}: none of its 4 query ids is a question searched "
        "(file: 'swe__q1', 'swe__q2', 'swe__q3', ...; dataset: 'q1', 'q2', 'q3'); "
        "set strip_prefix or id_map to map the file's ids to the dataset's"
    )
    ExternalRun.check_inputs({"path": str(path), "strip_prefix": "swe__"}, {"q1"}, {"q1"})
    empty = tmp_path / "empty.trec"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ExternalRunError, match="the file has no rows"):
        ExternalRun.check_inputs({"path": str(empty)}, {"q1"}, {"q1"})


@pytest.mark.parametrize(
    ("name", "text", "fmt", "message"),
    [
        ("short.trec", "q1 Q0 a.py 1 0.5\n", None, "short.trec:1: a TREC run line has 6 fields"),
        ("bad.trec", "q1 Q0 a.py 1 high s\n", None, "score 'high' is not a number"),
        (
            "x.jsonl",
            '{"instance_id": "q1", "found_files": ["a.py"]}\n{oops\n',
            None,
            "x.jsonl:2: not valid JSON",
        ),
        ("x.jsonl", '["q1"]\n', None, "x.jsonl:1: expected a JSON object"),
        ("x.jsonl", '{"found_files": []}\n', None, "no query id"),
        ("x.jsonl", '{"id": "q1"}\n', None, "no found_files or files list"),
        ("x.jsonl", '{"id": "q1", "files": "a.py"}\n', None, "files is not a list"),
        ("x.jsonl", '{"id": "q1", "files": [3]}\n', None, "is not a path or {path, score}"),
        ("x.txt", '{"id": "q1", "files": []}\n', "trec", "a TREC run line has 6 fields"),
    ],
)
def test_malformed_files_fail_with_one_line(
    tmp_path: Path, name: str, text: str, fmt: str | None, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    params = {"format": fmt} if fmt else {}
    with pytest.raises(
        ExternalRunError, match=message.replace("{", r"\{").replace("}", r"\}")
    ) as err:
        _stage(path, **params)
    assert "\n" not in str(err.value)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ExternalRunError, match="no such file"):
        _stage(tmp_path / "absent.trec")
    with pytest.raises(ExternalRunError, match="a folder, not a file"):
        _stage(tmp_path)
    binary = tmp_path / "bin.trec"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(ExternalRunError, match="not UTF-8 text"):
        _stage(binary)
    bad_map = tmp_path / "map.json"
    bad_map.write_text("[1, 2]", encoding="utf-8")
    good = _jsonl(tmp_path / "p.jsonl", [{"id": "q1", "found_files": ["a.py"]}])
    with pytest.raises(ExternalRunError, match="expected a JSON object"):
        _stage(good, id_map=str(bad_map))


def test_scoring_counts_files_absent_from_the_corpus(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "p.jsonl", [{"id": "q1", "found_files": ["gone.py", "a.py"]}])
    run = _stage(path).search({"q1": "?"}, k=5)
    ex = Example("q1", "?", gold_files=["a.py"])
    m = evaluate_stage(run, [ex], _corpus(), ks=(1, 2), budgets=(5, 15))
    row = m.per_query["q1"]
    assert row["P@1"] == 0.0 and row["P@2"] == 0.5 and row["MRR"] == 0.5 and row["R@2"] == 1.0
    assert m.unknown_chunks == 0
    # a file id stands for its chunks in the budget walk (gone.py has none: no tokens)
    assert row["R@0.005k"] == 0.0 and row["R@0.015k"] == 1.0


def test_locagent_found_entities_and_modules(tmp_path: Path) -> None:
    """LocAgent's released rows: found_entities as function runs (entity: ids), the
    files they name at file level, entities absent from the snapshot reported."""
    row = {"instance_id": "q1", "found_files": ["a.py"],
           "found_entities": ["b.py:B.run", "a.py:helper", "gone.py:f"],
           "found_modules": ["b.py:B", "a.py:helper"]}  # fmt: skip
    path = _jsonl(tmp_path / "locagent.jsonl", [row])
    stage = _stage(path, field="found_entities")
    run = stage.search({"q1": "?"}, k=10)
    assert run.ids("q1") == ["entity:b.py:B.run", "entity:a.py:helper", "entity:gone.py:f"]
    assert stage.artifacts == {"q1": {"not_in_snapshot": ["gone.py"]}}
    ex = Example("q1", "?", ("a.py",), gold_functions=("a.py:helper",))
    q = evaluate_stage(run, [ex], _corpus(), ks=[1, 2], budgets=[]).per_query["q1"]
    assert (q["Acc@1"], q["Acc@2"], q["function_MRR"], q["module_MRR"]) == (0.0, 1.0, 0.5, 0.5)
    modules = _stage(path, field="found_modules").search({"q1": "?"}, k=10)
    assert modules.ids("q1") == ["entity:b.py:B", "entity:a.py:helper"]
    with pytest.raises(ExternalRunError, match="field 'found_classes'"):
        RETRIEVERS.create("external", path=str(path), field="found_classes")
    with pytest.raises(ConfigError, match="format: Input should be 'trec' or 'jsonl'"):
        RETRIEVERS.create("external", path=str(path), format="csv")
    with pytest.raises(ConfigError, match="path: Field required"):
        ExternalRun(field="found_entities")
    trec = tmp_path / "sys.trec"
    trec.write_text("q1 Q0 a.py 1 1.0 sys\n", encoding="utf-8")
    with pytest.raises(ExternalRunError, match="needs a jsonl file"):
        _stage(trec, field="found_entities")


@pytest.mark.parametrize("entity", ["a.py:", ":f", "../a.py:f"])
def test_a_malformed_entity_stops_the_stage_in_one_line(tmp_path: Path, entity: str) -> None:
    row = {"instance_id": "q1", "found_entities": ["a.py:helper", entity]}
    path = _jsonl(tmp_path / "locagent.jsonl", [row])
    with pytest.raises(ExternalRunError, match=r"locagent\.jsonl:1: found_entities: ") as err:
        _stage(path, field="found_entities")
    assert "\n" not in str(err.value)

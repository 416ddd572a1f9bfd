"""The one reader of a stored run folder (:mod:`retrieval_bench.store.run_folder`):
one error rule, a :class:`ResultsFileError` naming the file and the line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from retrieval_bench.harness.compare.sides import question_fingerprints
from retrieval_bench.store.run_folder import (
    ResultsFileError,
    read_queries,
    read_run_config,
    stage_trec_path,
)


def _queries(folder: Path, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "queries.jsonl"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_reads_the_records_in_order_skipping_blank_lines(tmp_path: Path) -> None:
    rows = [{"query_id": "q1", "dataset": "d"}, {"query_id": "q2", "dataset": "d"}]
    _queries(tmp_path, json.dumps(rows[0]) + "\n\n  \r\n" + json.dumps(rows[1]) + "\r\n")
    assert read_queries(tmp_path) == rows


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"query_id": "q1"}\n{"query_id": "q2", "que', ":2: not valid JSON"),
        ('{"query_id": "q1"}\n\n[1, 2]\n', ":3: not a query record"),
        ('{"query": "?"}\n', ":1: not a query record (no 'query_id')"),
        (b'{"query_id": "q1"}\n{"query_id": "\xff"}\n', ":2: not UTF-8 text"),
    ],
)
def test_a_damaged_line_is_an_error_naming_file_and_line(
    tmp_path: Path, text: str | bytes, problem: str
) -> None:
    path = _queries(tmp_path, text)
    with pytest.raises(ResultsFileError) as err:
        read_queries(tmp_path)
    assert str(err.value).startswith(f"{path}{problem}")
    assert err.value.path == path


def test_fields_asked_for_must_be_on_every_line(tmp_path: Path) -> None:
    path = _queries(tmp_path, '{"query_id": "q1", "dataset": "d"}\n{"query_id": "q2"}\n')
    assert len(read_queries(tmp_path)) == 2
    with pytest.raises(ResultsFileError, match="no 'dataset'") as err:
        read_queries(tmp_path, ("query_id", "dataset"))
    assert str(err.value).startswith(f"{path}:2:")


def test_an_absent_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="cannot be read") as err:
        read_queries(tmp_path)
    assert err.value.path == tmp_path / "queries.jsonl"


def test_the_run_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"config": {"datasets": []}, "provenance": {}}')
    assert read_run_config(tmp_path)["config"] == {"datasets": []}
    (tmp_path / "config.json").write_text('{"config": ')
    with pytest.raises(ResultsFileError, match="config.json: not valid JSON"):
        read_run_config(tmp_path)
    (tmp_path / "config.json").write_text("[]")
    with pytest.raises(ResultsFileError, match="not a run config"):
        read_run_config(tmp_path)
    with pytest.raises(ResultsFileError, match="cannot be read"):
        read_run_config(tmp_path / "nothing")


def test_stage_trec_path_stays_in_the_folder(tmp_path: Path) -> None:
    assert stage_trec_path(tmp_path, "ds", "bm25") == tmp_path / "runs" / "ds" / "bm25.trec"
    with pytest.raises(ValueError, match="refusing"):
        stage_trec_path(tmp_path, "..", "bm25")


def test_compare_treats_an_unreadable_file_as_unknown_questions(tmp_path: Path) -> None:
    """``rbench compare``'s check reads through the same reader: a damaged or absent
    file means the run's questions cannot be told (None), a blank line is no damage."""
    good = '{"query_id": "q1", "question_fingerprint": "f1"}\n\n'
    _queries(tmp_path / "a", good)
    assert question_fingerprints(tmp_path / "a") == {"q1": "f1"}
    _queries(tmp_path / "b", good + '{"query_id": ')
    assert question_fingerprints(tmp_path / "b") is None
    assert question_fingerprints(tmp_path / "absent") is None


def test_fit_ltr_stops_with_the_file_and_line(tmp_path: Path) -> None:
    """``rbench fit-ltr`` reads through the same reader: a damaged line, or one
    without the fields it learns from, is a one-line ConfigError (exit 2)."""
    from retrieval_bench.errors import ConfigError
    from retrieval_bench.rank_fusion.ltr_data import load_training

    run = tmp_path / "r1"
    (run / "runs" / "ds").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"config": {"datasets": [{"name": "ds"}]}}))
    path = _queries(run, '{"query_id": "q1", "dataset": "ds", "gold_files": ["a.py"]}\n{"qu')
    with pytest.raises(ConfigError, match=f"^fit-ltr: {re.escape(str(path))}:2: not valid JSON"):
        load_training([run], ["bm25"])
    _queries(run, '{"query_id": "q1", "dataset": "ds"}\n')
    with pytest.raises(ConfigError, match=r":1: not a query record \(no 'gold_files'\)"):
        load_training([run], ["bm25"])
    (run / "config.json").write_text("{")
    with pytest.raises(ConfigError, match=r"config\.json: not valid JSON"):
        load_training([run], ["bm25"])

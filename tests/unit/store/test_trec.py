"""TREC run/qrels files: round trips, validation, agreement with pytrec_eval's parsers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.store.trec import (
    TrecFormatError,
    decode_id,
    encode_id,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)
from retrieval_bench.types import Run


def _random_run() -> Run:
    rng = np.random.default_rng(0)
    scores = {
        f"q-{q}": {
            f"src/pkg/m{d}.py:{d}-{d + 9}:{rng.integers(1 << 16):04x}": float(rng.normal())
            for d in range(int(rng.integers(0, 30)))
        }
        for q in range(20)
    }
    scores["q-ties"] = {"b": 1.0, "a": 1.0, "c": 0.1 + 0.2}
    return Run("dense+rrf", scores)


def test_run_round_trip_is_exact(tmp_path: Path) -> None:
    run = _random_run()
    n = write_run(tmp_path / "runs" / "dense.trec", run)
    assert n == sum(len(d) for d in run.scores.values())
    back = read_run(tmp_path / "runs" / "dense.trec")
    assert back.name == "dense+rrf"
    # queries with no results are not representable in a TREC file
    assert back.scores == {q: d for q, d in run.scores.items() if d}
    for q in back.query_ids():
        assert back.ranked(q) == run.ranked(q)


def test_run_file_format(tmp_path: Path) -> None:
    run = Run("bm25", {"q1": {"a.py:1-9:ff": 0.5, "b.py:2-3:00": 2.0, "c": 0.5}})
    write_run(tmp_path / "r.trec", run, tag="my-tag")
    assert (tmp_path / "r.trec").read_text().splitlines() == [
        "q1 Q0 b.py:2-3:00 1 2.0 my-tag",
        "q1 Q0 a.py:1-9:ff 2 0.5 my-tag",  # tie: ascending id
        "q1 Q0 c 3 0.5 my-tag",
    ]
    write_run(tmp_path / "top1.trec", run, k=1)
    assert len((tmp_path / "top1.trec").read_text().splitlines()) == 1


def test_run_agrees_with_pytrec_eval_parser(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = _random_run()
    write_run(tmp_path / "r.trec", run)
    with open(tmp_path / "r.trec") as fh:
        parsed = pytrec_eval.parse_run(fh)
    assert parsed == {q: d for q, d in run.scores.items() if d}


@pytest.mark.parametrize(
    ("qid", "docid", "tag"),
    [
        ("q 1", "a", "t"),
        ("q", "my dir/a b.py:1-9:ff", "t"),
        ("q", "a\tb", "t"),
        ("q", "a", "my tag"),
        ("wëird q", "ünïcode dir/ß\u00a0x.py:3-4:00", "t"),
        ("100%", "50% off.py:1-2:ab", "t%20x"),
        ("q\n", "a\r\nb\u2028c\x1f", " t "),
    ],
)
def test_ids_with_whitespace_and_percent_round_trip(
    tmp_path: Path, qid: str, docid: str, tag: str
) -> None:
    run = Run("x", {qid: {docid: 1.0, "plain.py:1-2:00": 0.5}})
    write_run(tmp_path / "r.trec", run, tag=tag)
    lines = (tmp_path / "r.trec").read_text(encoding="utf-8").splitlines()
    assert [len(line.split()) for line in lines] == [6, 6]  # one field per value
    assert lines[1].split()[2] == "plain.py:1-2:00"  # ids without whitespace/% are unchanged
    back = read_run(tmp_path / "r.trec")
    assert back.scores == run.scores and back.name == tag
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with open(tmp_path / "r.trec") as fh:
        assert {decode_id(q) for q in pytrec_eval.parse_run(fh)} == {qid}


def test_encoding_is_percent_encoding_of_whitespace_and_percent() -> None:
    assert encode_id("my dir/a b.py") == "my%20dir/a%20b.py"
    assert encode_id("a\tb%c\u00a0ü") == "a%09b%25c%C2%A0ü"
    assert decode_id(encode_id("a%20b %")) == "a%20b %"


def test_empty_ids_are_rejected(tmp_path: Path) -> None:
    for qid, docid, tag in (("q", "", "t"), ("", "a", "t"), ("q", "a", "")):
        with pytest.raises(TrecFormatError, match="empty"):
            write_run(tmp_path / "r.trec", Run("x", {qid: {docid: 1.0}}), tag=tag)
        assert not (tmp_path / "r.trec").exists()  # nothing half-written
    with pytest.raises(TrecFormatError, match="empty"):
        write_qrels(tmp_path / "q.qrels", {"q": {"": 1}})


def test_qrels_round_trip(tmp_path: Path) -> None:
    qrels = {"q1": {"a.py": 1, "b.py": 0}, "q2": {"src/x.go": 2, "y:1-2": -1}, "q 3": {"a b": 1}}
    assert write_qrels(tmp_path / "q.qrels", qrels) == 5
    assert read_qrels(tmp_path / "q.qrels") == qrels
    lines = (tmp_path / "q.qrels").read_text().splitlines()
    assert lines[0] == "q1 0 a.py 1" and lines[-1] == "q%203 0 a%20b 1"
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with open(tmp_path / "q.qrels") as fh:
        parsed = pytrec_eval.parse_qrel(fh)
    assert {decode_id(q): {decode_id(d): r for d, r in ds.items()} for q, ds in parsed.items()} == (
        qrels
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("q1 Q0 a 1 0.5\n", "6 fields"),
        ("q1 Q0 a 1 high tag\n", "not a number"),
        ("q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\n", "repeated"),
    ],
)
def test_malformed_run_files(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "bad.trec").write_text(text)
    with pytest.raises(TrecFormatError, match=match):
        read_run(tmp_path / "bad.trec")


def test_malformed_qrels_and_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "bad.qrels").write_text("q1 0 a yes\n")
    with pytest.raises(TrecFormatError, match="not an integer"):
        read_qrels(tmp_path / "bad.qrels")
    (tmp_path / "ok.qrels").write_text("\nq1 0 a 1\n\n")
    assert read_qrels(tmp_path / "ok.qrels") == {"q1": {"a": 1}}


def test_run_name_falls_back_to_file_stem_with_mixed_tags(tmp_path: Path) -> None:
    (tmp_path / "mixed.trec").write_text("q Q0 a 1 1.0 t1\nq Q0 b 2 0.5 t2\n")
    assert read_run(tmp_path / "mixed.trec").name == "mixed"
    assert read_run(tmp_path / "mixed.trec", name="given").name == "given"

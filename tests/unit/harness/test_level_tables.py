"""The level tables say when questions have gold functions no chunk stands for
(docs/metrics.md#function-and-module-level)."""

from __future__ import annotations

from retrieval_bench.harness.run.level_tables import format_level_tables, unmapped_note

ROW = {"function_Acc@1": 0.5, "function_R@1": 0.5, "function_MRR": 0.5, "function_nDCG@1": 0.5}


def test_the_note_names_the_share_of_unmapped_questions() -> None:
    table = {"bm25": {**ROW, "function_unmapped": 0.25}, "ext": {**ROW, "function_unmapped": 0.25}}
    out = "\n".join(format_level_tables(table, ["bm25", "ext"], [1], 1, ["function"], "fn"))
    assert "function level" in out
    assert "note: 25.0% of the queries with gold functions have one that no chunk" in out


def test_no_note_when_every_gold_function_maps_to_a_chunk() -> None:
    assert unmapped_note({"bm25": {**ROW, "function_unmapped": 0.0}}) is None
    assert unmapped_note({"bm25": ROW}) is None  # a run stored before the measure
    out = "\n".join(format_level_tables({"bm25": ROW}, ["bm25"], [1], 1, ["function"], "fn"))
    assert "note:" not in out

from __future__ import annotations

from retrieval_bench.harness.report import format_table, stage_columns


def test_table_aligned_and_ordered() -> None:
    table = {"bm25": {"P@5": 0.5, "R@5": 0.25, "seconds": 1.234}, "dense": {"P@5": 1.0}}
    text = format_table(table, ["P@5", "R@5", "seconds"], ["dense", "bm25", "absent"], "T")
    lines = text.splitlines()
    assert lines[0] == "T"
    assert lines[3].startswith("dense") and lines[4].startswith("bm25")
    assert "0.500" in lines[4] and "0.250" in lines[4] and "1.2" in lines[4]
    assert lines[3].split()[-1] == "-"  # missing metric shown as a dash
    assert len({len(line) for line in lines[1:]}) == 1  # aligned


def test_columns() -> None:
    cols = stage_columns(10, [8000, 13000])
    assert cols[:3] == ["P@10", "R@10", "F1@10"]
    assert "F1@8k" in cols and "F1@13k" in cols and "nDCG@10" in cols

from __future__ import annotations

import pytest

from retrieval_bench.harness.run.report import format_table, stage_columns


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


def _paired_table() -> dict[str, dict[str, float]]:
    """A stage table with the paired entries of hand-built per-query values: bm25 the
    baseline, rrf-issue a fusion much worse than its best input files-issue."""
    from retrieval_bench.harness.compare.paired import encode, paired_view

    def rows(values: list[float], failed: int | None = None) -> dict[str, dict[str, float]]:
        return {f"q{i:02d}": {"Acc@5": v, "failed": float(i == failed)}
                for i, v in enumerate(values)}  # fmt: skip

    per_query = {
        "bm25": rows([1.0] * 6 + [0.0] * 6),
        "files-issue": rows([1.0] * 8 + [0.0] * 4),
        "rrf-issue": rows([1.0, 1.0] + [0.0] * 10, failed=11),
        "rrf": rows([1.0] * 8 + [0.0] * 4),
    }
    inputs = {"rrf-issue": ["bm25", "files-issue"], "rrf": ["bm25", "files-issue"]}
    view = paired_view(per_query, list(per_query), "bm25", "Acc@5", inputs)
    assert view is not None
    means = {s: {"Acc@5": sum(r["Acc@5"] for r in q.values()) / 12} for s, q in per_query.items()}
    return {s: {**means[s], **entries} for s, entries in encode(view).items()}


def test_paired_columns_baseline_dash_guard_mark_and_notes() -> None:
    from retrieval_bench.harness.compare.paired import decode
    from retrieval_bench.metrics.stats import randomisation_test

    table = _paired_table()
    view = decode(table)
    assert view is not None
    text = format_table(table, ["Acc@5"], None, "T", paired=True)
    lines = text.splitlines()
    assert lines[1].split() == ["stage", "Acc@5", "ΔAcc@5", "vs", "bm25", "p"]
    cells = {line.split()[0]: line.split()[1:] for line in lines[3:7]}
    assert cells["bm25"] == ["0.500", "—", "—"]  # the baseline's own row
    files = view.tests["files-issue"]
    assert cells["files-issue"] == ["0.667", f"{files.delta:+.3f}", f"{files.p_holm:.3f}"]
    assert "rrf-issue!" in cells and "rrf" in cells  # only the significantly worse fusion
    a, b = [1.0] * 8 + [0.0] * 3, [1.0, 1.0] + [0.0] * 9  # q11 failed: left out
    p = randomisation_test(a, b, n_resamples=10000, seed=0).p_value
    assert p < 0.05
    assert lines[7].startswith("Δ, p: Acc@5 per query paired with bm25")
    assert lines[8] == "pairs: rrf-issue 11 of 12 queries (a failed query is left out)"
    short = f"{p:.3f}".lstrip("0")
    assert lines[9] == (
        "! rrf-issue is significantly worse than its best input files-issue "
        f"(Acc@5 .182 vs .727, p={short}, 11 of 12 queries)"
    )
    assert len(lines) == 10
    plain = format_table(table, ["Acc@5"], None, "T")  # not asked for: the table alone
    assert "Δ" not in plain and "!" not in plain and len(plain.splitlines()) == 7


def test_paired_columns_in_markdown_and_csv() -> None:
    import csv
    import io

    from retrieval_bench.harness.run.report import csv_tables

    table = _paired_table()
    md = format_table(table, ["Acc@5"], None, "T", fmt="markdown", paired=True).splitlines()
    assert md[2] == "| stage | Acc@5 | ΔAcc@5 vs bm25 | p |"
    assert md[4] == "| bm25 | 0.500 | — | — |" and md[6].startswith("| rrf-issue! |")
    assert md[8] == "" and md[9].startswith("Δ, p:")  # notes after a blank line
    rows = list(csv.DictReader(io.StringIO(format_table(table, ["Acc@5"], fmt="csv", paired=True))))
    by_stage = {r["stage"]: r for r in rows}
    assert list(rows[0]) == ["stage", "Acc@5", "ΔAcc@5 vs bm25", "p", "pairs", "worse_than_input"]
    assert by_stage["bm25"]["ΔAcc@5 vs bm25"] == "" and by_stage["bm25"]["pairs"] == "12"
    assert by_stage["rrf-issue"]["worse_than_input"] == "files-issue"
    assert by_stage["rrf-issue"]["pairs"] == "11" and by_stage["rrf"]["worse_than_input"] == ""
    assert float(by_stage["files-issue"]["ΔAcc@5 vs bm25"]) == pytest.approx(2 / 12, abs=1e-6)
    both = csv_tables({"all": table, "x=true": table}, ["Acc@5"], list(table), paired=True)
    assert both.splitlines()[0].endswith(",ΔAcc@5 vs bm25,p,pairs,worse_than_input")
    assert len(both.splitlines()) == 9

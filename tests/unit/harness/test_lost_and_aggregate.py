"""Lost-at-stage attribution (hand-computed, and a property against R@k) and
table aggregation."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.runner import _aggregate
from retrieval_bench.harness.run.snapshot_work import score_dataset as _score_dataset
from retrieval_bench.runs.lifting import ranked_files
from retrieval_bench.types import Chunk, Example, Run, StageResult


def _chunk(cid: str, path: str) -> Chunk:
    return Chunk(cid, path, 1, 2, "python", "file", None, "x", 1)


CORPUS = Corpus(Path("."), [_chunk("a1", "a.py"), _chunk("b1", "b.py"), _chunk("c1", "c.py")])
EXAMPLES = [
    Example("q1", "?", ("a.py", "b.py")),
    Example("q2", "?", ("c.py", "missing.py")),
]


def _config(table_k: int) -> Any:
    return SimpleNamespace(
        table_k=table_k,
        metrics=SimpleNamespace(ks=[1, table_k], budgets=[], conventions="locagent"),
    )


def _dataset(examples: list[Example], corpus: Corpus = CORPUS) -> Any:
    return SimpleNamespace(examples=examples, corpus=corpus)


def test_retriever_loses_gold_it_does_not_rank_in_its_top_k() -> None:
    run = Run("r", {"q1": {"a1": 1.0}, "q2": {"c1": 1.0}})
    out = _score_dataset(_dataset(EXAMPLES), [StageResult("r", run, 0.0, inputs=None)], _config(1))
    # missing.py is not in the snapshot: never counted as lost
    assert out.lost["r"] == {"q1": ["b.py"]}
    assert out.per_query["r"]["q1"]["lost"] == 1.0 and out.per_query["r"]["q2"]["lost"] == 0.0


def test_fusion_loses_only_what_some_retriever_had() -> None:
    parent1 = StageResult("p1", Run("p1", {"q1": {"a1": 1.0}, "q2": {}}), 0.0, inputs=None)
    parent2 = StageResult("p2", Run("p2", {"q1": {"b1": 1.0}, "q2": {}}), 0.0, inputs=None)
    fused = StageResult("f", Run("f", {"q1": {"a1": 1.0, "b1": 0.5}}), 0.0, inputs=("p1", "p2"))
    stages = [parent1, parent2, fused]
    # top 2: a.py and b.py are both kept; top 1: b.py (found by p2) is dropped;
    # q2: nobody had c.py, so the fusion lost nothing of it
    assert _score_dataset(_dataset(EXAMPLES), stages, _config(2)).lost["f"] == {}
    assert _score_dataset(_dataset(EXAMPLES), stages, _config(1)).lost["f"] == {"q1": ["b.py"]}


def test_fusion_loses_only_what_its_declared_inputs_had() -> None:
    """A fusion that reads p1 alone cannot lose b.py, which only p2 found; one that
    reads both loses it (hand-computed, top 1)."""
    parent1 = StageResult("p1", Run("p1", {"q1": {"a1": 1.0}, "q2": {}}), 0.0, inputs=None)
    parent2 = StageResult("p2", Run("p2", {"q1": {"b1": 1.0}, "q2": {}}), 0.0, inputs=None)
    only = StageResult("only-p1", Run("only-p1", {"q1": {"a1": 1.0}}), 0.0, inputs=("p1",))
    both = StageResult("both", Run("both", {"q1": {"a1": 1.0}}), 0.0, inputs=("p1", "p2"))
    out = _score_dataset(_dataset(EXAMPLES), [parent1, parent2, only, both], _config(1))
    assert out.lost["only-p1"] == {} and out.lost["both"] == {"q1": ["b.py"]}
    assert out.per_query["only-p1"]["q1"]["lost"] == 0.0
    assert out.per_query["both"]["q1"]["lost"] == 1.0


def test_reranker_input_is_the_stage_it_reranks() -> None:
    ret = StageResult("r", Run("r", {"q1": {"a1": 1.0, "b1": 0.9}}), 0.0, inputs=None)
    fused = StageResult("f", Run("f", {"q1": {"a1": 1.0}}), 0.0, inputs=("r",))
    rer = StageResult("x", Run("x", {"q1": {"c1": 1.0}}), 0.0, inputs=("f",))
    out = _score_dataset(_dataset(EXAMPLES[:1]), [ret, fused, rer], _config(1))
    assert out.lost["x"] == {"q1": ["a.py"]}  # b.py never reached the reranker


def test_skipped_gold_file_is_missing_gold_with_its_reason() -> None:
    from retrieval_bench.datasets.jsonl import check_gold, missing_gold_reasons

    corpus = Corpus(Path("."), [_chunk("a1", "a.py")], skipped={"big.py": "larger than 10 bytes"})
    missing = check_gold([Example("q", "?", ("a.py", "big.py", "gone.py"))], set(corpus.paths))
    assert missing == {"q": ["big.py", "gone.py"]}
    assert missing_gold_reasons(missing, corpus.skipped) == {
        "big.py": "larger than 10 bytes",
        "gone.py": "not in the snapshot",
    }


def test_gold_file_an_ignore_rule_left_out_says_so(tmp_path: Path) -> None:
    """A gold file the snapshot has but ``ignore:``/``include:`` left out is not
    reported as absent from the snapshot (the user would look for a wrong path)."""
    from retrieval_bench.datasets.jsonl import IGNORED_GOLD, check_gold, missing_gold_reasons

    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "build.sh").write_text("make\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    corpus = Corpus(tmp_path, [_chunk("a1", "a.py")])
    gold = ("a.py", "scripts/build.sh", "gone.py", "../a.py", "scripts")
    missing = check_gold([Example("q", "?", gold)], set(corpus.paths))
    assert missing_gold_reasons(missing, corpus.skipped, corpus.root) == {
        "scripts/build.sh": IGNORED_GOLD,
        "gone.py": "not in the snapshot",
        "../a.py": "not in the snapshot",
        "scripts": "not in the snapshot",
    }


def test_gold_file_under_a_symlinked_folder_says_so(tmp_path: Path) -> None:
    """The walker does not follow a symlinked folder; its files are not 'ignored'."""
    from retrieval_bench.datasets.jsonl import UNDER_LINK, check_gold, missing_gold_reasons

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.py").write_text("x = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "vendored").symlink_to(tmp_path / "real")
    corpus = Corpus(tmp_path, [_chunk("r1", "real/x.py")])
    missing = check_gold([Example("q", "?", ("pkg/vendored/x.py",))], set(corpus.paths))
    assert missing_gold_reasons(missing, corpus.skipped, corpus.root) == {
        "pkg/vendored/x.py": f"{UNDER_LINK} (pkg/vendored)"
    }


_PATHS = [f"f{i}.py" for i in range(6)]
_CHUNKS = [_chunk(f"f{i}-{j}", p) for i, p in enumerate(_PATHS) for j in range(3)]
_BIG = Corpus(Path("."), _CHUNKS)
_IDS = [c.id for c in _CHUNKS]
_runs = st.dictionaries(st.sampled_from(_IDS), st.floats(0, 1, allow_nan=False), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    retrieved=st.lists(_runs, min_size=1, max_size=3),
    fused=_runs,
    gold=st.lists(st.sampled_from([*_PATHS, "absent.py"]), min_size=1, max_size=4, unique=True),
    table_k=st.integers(1, 6),
)
def test_lost_files_are_never_in_the_stage_top_k_files(
    retrieved: list[dict[str, float]], fused: dict[str, float], gold: list[str], table_k: int
) -> None:
    """Property: what the table calls lost is never among the top-k files the
    table shows (and R@k counts); lost + kept = the gold files the input had."""
    ex = Example("q", "?", tuple(gold))
    stages = [
        StageResult(f"r{i}", Run(f"r{i}", {"q": d}), 0.0, inputs=None)
        for i, d in enumerate(retrieved)
    ]
    labels = tuple(s.name for s in stages)
    stages.append(StageResult("f", Run("f", {"q": fused}), 0.0, inputs=labels))
    out = _score_dataset(_dataset([ex], _BIG), stages, _config(table_k))
    for stage in stages:
        top = ranked_files(stage.run.ids("q"), _BIG)[:table_k]
        lost = out.lost[stage.name].get("q", [])
        assert not set(lost) & set(top)
        row = out.per_query[stage.name]["q"]
        assert row["lost"] == len(lost) == row[f"Lost@{table_k}"]
        present = {g for g in gold if g != "absent.py"}
        if stage.parent == "corpus":
            had = present
        else:
            had = present & {f for s in stages[:-1] for f in ranked_files(s.run.ids("q"), _BIG)}
        assert set(lost) == had - set(top)
        kept = len(set(gold) & set(top))
        assert row[f"R@{table_k}"] == kept / len(gold)


def test_aggregate_averages_each_metric_over_queries_that_have_it() -> None:
    outcome: Any = SimpleNamespace(
        per_query={
            "s": {
                "q1": {"R@5": 1.0, "line_F1@5": 0.5},
                "q2": {"R@5": 0.0},
                "q3": {"R@5": 0.5, "line_F1@5": 0.25},
            }
        },
        stages=[SimpleNamespace(name="s", seconds=2.0, llm_calls=3, llm_cache_hits=1)],
    )
    table = _aggregate([outcome], ["s"], {"q1", "q2", "q3"})
    assert table["s"]["R@5"] == 0.5
    assert table["s"]["line_F1@5"] == 0.375  # q2 has no spans: not counted as zero
    assert table["s"]["seconds"] == 2.0
    assert table["s"]["llm_calls"] == 3.0 and table["s"]["llm_cache_hits"] == 1.0
    assert _aggregate([outcome], ["s"], {"q2"})["s"]["R@5"] == 0.0

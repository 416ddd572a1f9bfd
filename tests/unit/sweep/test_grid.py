"""Sweep specs and grid expansion: order, labels, sampling, limits and every bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.config import BenchmarkConfig, parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.sweep import grid as grid_module
from retrieval_bench.sweep.grid import Cell, expand, grid_size
from retrieval_bench.sweep.spec import SweepSpec, load_sweep_config, objective_cutoffs

BASE: dict[str, Any] = {
    "name": "t",
    "datasets": [{"name": "d", "questions": "/data/q.jsonl"}],
    "chunker": {"name": "ast", "budget": 512, "tokenizer": "regex-code"},
    "retrievers": [{"name": "bm25", "k1": 1.2}, {"name": "exact"}],
    "fusions": [{"name": "rrf", "k_rrf": 60}],
}


def _base(**over: Any) -> BenchmarkConfig:
    return parse_config({**BASE, **over})


def _expand(grid: dict[str, list[Any]], max_cells: int | None = None, **spec: Any) -> list[Cell]:
    return expand(_base(), SweepSpec(grid=grid, **spec), max_cells)


def _error(grid: dict[str, list[Any]], **spec: Any) -> str:
    with pytest.raises(ConfigError) as err:
        _expand(grid, **spec)
    return str(err.value)


# -- expansion -----------------------------------------------------------------------
def test_full_grid_in_path_order_with_readable_labels() -> None:
    cells = _expand(
        {
            "chunker.budget": [256, 1024],
            "fusions.rrf.k_rrf": [10, 60],
            "rerankers": [[], ["llm-logprob"]],
        }
    )
    assert [c.index for c in cells] == list(range(8))
    assert [c.label for c in cells] == [
        "chunker.budget=256 fusions.rrf.k_rrf=10 rerankers=[]",
        "chunker.budget=256 fusions.rrf.k_rrf=10 rerankers=[llm-logprob]",
        "chunker.budget=256 fusions.rrf.k_rrf=60 rerankers=[]",
        "chunker.budget=256 fusions.rrf.k_rrf=60 rerankers=[llm-logprob]",
        "chunker.budget=1024 fusions.rrf.k_rrf=10 rerankers=[]",
        "chunker.budget=1024 fusions.rrf.k_rrf=10 rerankers=[llm-logprob]",
        "chunker.budget=1024 fusions.rrf.k_rrf=60 rerankers=[]",
        "chunker.budget=1024 fusions.rrf.k_rrf=60 rerankers=[llm-logprob]",
    ]
    last = cells[-1]
    assert last.assignments == {
        "chunker.budget": 1024,
        "fusions.rrf.k_rrf": 60,
        "rerankers": [{"name": "llm-logprob"}],
    }
    assert last.config.chunker.params() == {"budget": 1024, "tokenizer": "regex-code"}
    assert last.config.fusions[0].params() == {"k_rrf": 60}
    assert [r.name for r in last.config.rerankers] == ["llm-logprob"]
    assert cells[0].config.rerankers == []
    assert grid_size(SweepSpec(grid={"a": [1, 2, 3], "b": [1, 2]})) == 6


def test_each_cell_differs_from_the_base_only_in_its_assignments() -> None:
    base = _base()
    sweep = SweepSpec(grid={"retrievers.bm25.k1": [0.9, 1.5], "candidates": [20, 50]})
    for cell in expand(base, sweep):
        want = base.model_dump()
        want["retrievers"][0]["k1"] = cell.assignments["retrievers.bm25.k1"]
        want["candidates"] = cell.assignments["candidates"]
        assert cell.config.model_dump() == want
        assert cell.config.fingerprint() != base.fingerprint()
    assert base.retrievers[0].params() == {"k1": 1.2}  # the base is never changed


def test_whole_list_alternatives_take_names_as_shorthand_and_labels_stay_distinct() -> None:
    cells = _expand(
        {"fusions": [["rrf"], [{"name": "rrf", "k_rrf": 10}], [{"name": "vote", "id": "v"}, "rrf"]]}
    )
    assert [c.label for c in cells] == [
        "fusions=[rrf]",
        "fusions=[rrf(k_rrf=10)]",
        "fusions=[vote(id=v),rrf]",
    ]
    assert [f.label for f in cells[2].config.fusions] == ["v", "rrf"]
    assert cells[1].config.fusions[0].params() == {"k_rrf": 10}


def test_long_values_are_shortened_in_labels() -> None:
    long_dir = "/models/" + "x" * 60 + "/minilm"
    cells = _expand({"retrievers.exact.rg_path": [long_dir, "/usr/bin/rg"]})
    assert cells[0].label.startswith("retrievers.exact.rg_path=…")
    assert cells[0].label.endswith("/minilm") and len(cells[0].label) < 70
    assert cells[0].assignments["retrievers.exact.rg_path"] == long_dir
    assert cells[1].label == "retrievers.exact.rg_path=/usr/bin/rg"


def test_a_swept_chunker_name_keeps_only_the_base_parameters_it_takes() -> None:
    window, ast = _expand({"chunker.name": ["window", "ast"]})
    assert window.config.chunker.name == "window"
    assert window.config.chunker.params() == {"tokenizer": "regex-code"}
    assert ast.config.chunker.params() == {"budget": 512, "tokenizer": "regex-code"}
    cells = _expand({"chunker.name": ["window", "truncate"], "chunker.tokenizer": ["regex-code"]})
    assert [c.config.chunker.name for c in cells] == ["window", "truncate"]


def test_a_chunker_parameter_applies_only_to_the_chunkers_that_take_it() -> None:
    cells = _expand({"chunker.name": ["window", "ast"], "chunker.budget": [256, 512]})
    assert [c.index for c in cells] == [0, 1, 2]
    assert [c.label for c in cells] == [
        "chunker.name=window",
        "chunker.name=ast chunker.budget=256",
        "chunker.name=ast chunker.budget=512",
    ]
    assert [c.assignments for c in cells] == [
        {"chunker.name": "window"},
        {"chunker.name": "ast", "chunker.budget": 256},
        {"chunker.name": "ast", "chunker.budget": 512},
    ]
    assert [c.config.chunker.model_dump() for c in cells] == [
        {"name": "window", "id": None, "tokenizer": "regex-code"},
        {"name": "ast", "id": None, "budget": 256, "tokenizer": "regex-code"},
        {"name": "ast", "id": None, "budget": 512, "tokenizer": "regex-code"},
    ]
    base = _base().model_dump()
    for cell in cells:  # nothing else differs from the base
        assert {**cell.config.model_dump(), "chunker": base["chunker"]} == base


def test_collapsed_cells_keep_the_first_combination_in_grid_order() -> None:
    grid: dict[str, list[Any]] = {
        "chunker.budget": [256, 512],
        "candidates": [5, 10],
        "chunker.name": ["window", "ast", "truncate"],
        "chunker.size": [64, 128],
        "chunker.tokenizer": ["regex-code"],  # every chunker takes it: never left out
    }
    cells = _expand(grid)
    assert grid_size(SweepSpec(grid=grid)) == 24  # combinations, before collapsing
    tok = " chunker.tokenizer=regex-code"
    assert [c.label for c in cells] == [
        f"candidates=5 chunker.name=window chunker.size=64{tok}",
        f"candidates=5 chunker.name=window chunker.size=128{tok}",
        f"chunker.budget=256 candidates=5 chunker.name=ast{tok}",
        f"candidates=5 chunker.name=truncate{tok}",
        f"candidates=10 chunker.name=window chunker.size=64{tok}",
        f"candidates=10 chunker.name=window chunker.size=128{tok}",
        f"chunker.budget=256 candidates=10 chunker.name=ast{tok}",
        f"candidates=10 chunker.name=truncate{tok}",
        f"chunker.budget=512 candidates=5 chunker.name=ast{tok}",
        f"chunker.budget=512 candidates=10 chunker.name=ast{tok}",
    ]
    assert [c.index for c in cells] == list(range(10))
    assert cells[1].assignments == {
        "candidates": 5,
        "chunker.name": "window",
        "chunker.size": 128,
        "chunker.tokenizer": "regex-code",
    }
    assert cells[1].config.chunker.params() == {"tokenizer": "regex-code", "size": 128}
    assert cells[3].config.chunker.params() == {"tokenizer": "regex-code"}
    assert cells[9].config.chunker.params() == {"budget": 512, "tokenizer": "regex-code"}


def test_the_limit_and_samples_count_combinations_before_collapsing() -> None:
    grid: dict[str, list[Any]] = {
        "chunker.name": ["window", "ast", "truncate"],
        "chunker.budget": list(range(16, 516)),
        "chunker.size": [64, 128, 256],
    }
    assert grid_size(SweepSpec(grid=grid)) == 4500
    assert _error(grid) == (
        "the sweep grid has 4,500 combinations (3 × 500 × 3; 504 distinct cells, as a "
        "chunker parameter applies only to the chunkers that take it), more than "
        "--max-cells 1000, which counts combinations: narrow the grid, sample with "
        "random: N, or pass --max-cells 4500"
    )
    assert "more than --max-cells 4499, which counts" in _error(grid, max_cells=4499)
    # 10 combinations drawn; those that collapse into one cell count once
    cells = _expand(grid, random=10, seed=1)
    assert 0 < len(cells) < 10
    assert len({c.label for c in cells}) == len(cells)
    assert [c.index for c in cells] == list(range(len(cells)))
    small = {"chunker.name": ["window", "ast"], "chunker.budget": [256, 512]}
    assert len(_expand(small, random=4)) == 3  # the whole grid, collapsed


def test_the_whole_chunker_is_swept_as_entries() -> None:
    cells = _expand(
        {
            "chunker": [
                "truncate",
                {"name": "window", "size": 256, "unit": "tokens"},
                {"name": "ast", "budget": 1024, "id": "a"},
            ],
            "candidates": [5],
        }
    )
    assert [c.label for c in cells] == [
        "chunker=truncate candidates=5",
        "chunker=window(size=256,unit=tokens) candidates=5",
        "chunker=ast(budget=1024,id=a) candidates=5",
    ]
    assert [c.assignments["chunker"] for c in cells] == [
        {"name": "truncate"},
        {"name": "window", "size": 256, "unit": "tokens"},
        {"name": "ast", "budget": 1024, "id": "a"},
    ]
    # each entry replaces the base's chunker: no base parameter (tokenizer) is kept
    assert [c.config.chunker.model_dump() for c in cells] == [
        {"name": "truncate", "id": None},
        {"name": "window", "id": None, "size": 256, "unit": "tokens"},
        {"name": "ast", "id": "a", "budget": 1024},
    ]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            {"chunker": ["ast", {"size": 64}]},
            "sweep.grid.chunker: alternative 2 ({size:64}) is not a chunker entry (a name, "
            "or a mapping with a name); write e.g. [ast, {name: window, size: 256, unit: tokens}]",
        ),
        (
            {"chunker": [["ast"]]},
            "sweep.grid.chunker: alternative 1 ([ast]) is not a chunker entry",
        ),
        (
            {"chunker": ["ast", "windo"]},
            "sweep.grid.chunker: alternative 2 (windo): unknown chunker 'windo'; choose one of:",
        ),
        (
            {"chunker": ["ast", {"name": "window", "budget": 256}]},
            "sweep.grid.chunker: alternative 2 (window(budget=256)): unknown parameter "
            "'budget' of chunker 'window'; valid parameters: overlap, size, tokenizer, unit",
        ),
        (
            {"chunker": ["ast", {"name": "ast"}]},
            "sweep.grid.chunker: alternative 2 (ast) repeats alternative 1; list each value once",
        ),
        (
            {"chunker": ["ast", {"name": "window", "size": "abc"}]},
            "sweep.grid.chunker: the value window(size=abc) is not valid: chunker.size: "
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            {"chunker": [{"name": "ast", "budget": 8}]},
            "sweep.grid.chunker: the value ast(budget=8) is not valid: "
            "chunker (ast): budget must be at least 16 tokens",
        ),
        (
            {"chunker": ["ast"], "chunker.budget": [256]},
            "sweep.grid.chunker.budget: cannot be combined with sweep.grid.chunker, which "
            "sweeps whole chunker entries; set budget in those entries instead",
        ),
        (
            {"chunker.budget": [256], "chunker": ["ast"]},
            "sweep.grid.chunker.budget: cannot be combined with sweep.grid.chunker",
        ),
        (
            {"chunker.name": ["ast"], "chunker": ["window"]},
            "sweep.grid.chunker.name: cannot be combined with sweep.grid.chunker, which "
            "sweeps whole chunker entries; give each entry its name instead",
        ),
    ],
)
def test_whole_chunker_alternatives_are_checked(grid: dict[str, list[Any]], message: str) -> None:
    assert _error(grid).startswith(message)


# -- random samples ------------------------------------------------------------------
def test_random_samples_are_distinct_deterministic_and_in_grid_order() -> None:
    grid = {"candidates": list(range(1, 41)), "table_k": [1, 2, 3]}
    first = _expand(grid, random=7, seed=3)
    again = _expand(grid, random=7, seed=3)
    other = _expand(grid, random=7, seed=4)
    labels = [c.label for c in first]
    assert len(labels) == 7 and len(set(labels)) == 7
    assert labels == [c.label for c in again]
    assert labels != [c.label for c in other]
    full = [c.label for c in _expand(grid)]
    assert set(labels) <= set(full)
    assert sorted(labels, key=full.index) == labels
    assert [c.index for c in first] == list(range(7))


def test_a_sample_as_large_as_the_grid_is_the_whole_grid() -> None:
    grid = {"candidates": [10, 20, 30]}
    assert [c.label for c in _expand(grid, random=50)] == [c.label for c in _expand(grid)]


def test_sampling_a_huge_grid_never_builds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_product(*_: Any) -> Any:
        raise AssertionError("the full grid was enumerated")

    monkeypatch.setattr(grid_module.itertools, "product", no_product)
    million: dict[str, list[Any]] = {
        "retrievers.bm25.k1": [round(0.01 * i, 2) for i in range(1, 101)],
        "retrievers.bm25.b": [round(0.01 * i, 2) for i in range(100)],
        "candidates": list(range(1, 101)),
    }
    start = time.perf_counter()
    cells = _expand(million, random=5, seed=1)
    assert len({c.label for c in cells}) == 5
    # 10^20 cells: more than range() can sample from
    paths = ["retrievers.bm25.k1", "retrievers.bm25.b", "fusions.rrf.k_rrf", "candidates"]
    huge = {p: list(range(1, 10_001)) for p in [*paths, "table_k"]}
    assert grid_size(SweepSpec(grid=huge)) == 10**20
    cells = _expand(huge, random=5, seed=1)
    assert len({c.label for c in cells}) == 5
    assert time.perf_counter() - start < 5


# -- limits --------------------------------------------------------------------------
def test_a_grid_over_the_limit_is_refused_with_its_count() -> None:
    grid: dict[str, list[Any]] = {
        "retrievers.bm25.k1": [0.9, 1.2],
        "retrievers.bm25.b": [0.1, 0.2, 0.3, 0.4, 0.5],
        "candidates": list(range(1, 1001)),
    }
    assert _error(grid) == (
        "the sweep grid has 10,000 cells (2 × 5 × 1000), more than --max-cells 1000: "
        "narrow the grid, sample with random: N, or pass --max-cells 10000"
    )
    assert "more than --max-cells 9999:" in _error(grid, max_cells=10_000 - 1)


def test_the_limit_is_overridden_by_the_argument_or_the_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[BenchmarkConfig] = []
    monkeypatch.setattr(grid_module.validate, "validate_stages", checked.append)  # for speed
    grid: dict[str, list[Any]] = {
        "retrievers.bm25.k1": [0.9, 1.2],
        "retrievers.bm25.b": [0.1, 0.2, 0.3, 0.4, 0.5],
        "candidates": list(range(1, 1001)),
    }
    cells = expand(_base(), SweepSpec(grid=grid), 10_000)
    assert len(cells) == len(checked) == 10_000
    assert len({c.label for c in cells}) == 10_000
    small = SweepSpec(grid={"candidates": [10, 20, 30], "table_k": [1, 2, 3, 4]}, max_cells=10)
    with pytest.raises(ConfigError, match=r"has 12 cells \(3 × 4\), more than --max-cells 10:"):
        expand(_base(), small)  # the spec's limit when no argument is given
    assert len(expand(_base(), small, 12)) == 12  # the argument wins over the spec
    with pytest.raises(ConfigError, match="more than --max-cells 11:"):
        expand(_base(), small.model_copy(update={"max_cells": 100}), 11)


def test_with_random_the_limit_applies_to_the_sample() -> None:
    grid = {"candidates": list(range(1, 101)), "table_k": list(range(1, 101))}
    assert len(_expand(grid, random=3, max_cells=5)) == 3
    assert _error(grid, random=8, max_cells=5) == (
        "random: 8 draws 8 cells, more than --max-cells 5: sample fewer, or pass --max-cells 8"
    )


# -- bad paths and alternatives ------------------------------------------------------
def test_a_path_naming_no_parameter_lists_the_valid_ones() -> None:
    assert _error({"fusions.rrf.k2": [1]}) == (
        "sweep.grid.fusions.rrf.k2: unknown parameter 'k2' of fusion 'rrf'; "
        "valid parameters: cutoff, inputs, k_rrf, level, weights"
    )
    msg = _error({"retrievers.bm25.k2": [1]})
    assert msg.startswith("sweep.grid.retrievers.bm25.k2: unknown parameter 'k2' of retriever")
    valid = msg.split("valid parameters: ")[1].split(", ")
    assert {"b", "k1"} <= set(valid) and "llm" not in valid and "name" not in valid
    assert _error({"chunker.size": [64]}) == (
        "sweep.grid.chunker.size: unknown parameter 'size' of chunker 'ast'; "
        "valid parameters: budget, tokenizer"
    )


def test_a_reranker_path_accepts_input() -> None:
    base = _base(rerankers=[{"name": "llm-yesno", "id": "yn"}])
    cells = expand(base, SweepSpec(grid={"rerankers.yn.input": ["rrf", "bm25"]}))
    assert [c.config.rerankers[0].params() for c in cells] == [{"input": "rrf"}, {"input": "bm25"}]


def test_a_chunker_parameter_no_swept_chunker_takes_is_refused() -> None:
    assert _error({"chunker.name": ["window", "ast"], "chunker.budgt": [256, 512]}) == (
        "sweep.grid.chunker.budgt: no swept chunker takes parameter 'budgt'; valid "
        "parameters: window: overlap, size, tokenizer, unit; ast: budget, tokenizer"
    )
    assert _error({"chunker.name": ["window", "truncate"], "chunker.budget": [256]}) == (
        "sweep.grid.chunker.budget: no swept chunker takes parameter 'budget'; valid "
        "parameters: window: overlap, size, tokenizer, unit; truncate: max_tokens, tokenizer"
    )
    msg = _error({"chunker.name": ["ast", "windows"]})
    assert msg.startswith("sweep.grid.chunker.name: unknown chunker 'windows'; choose one of:")
    # a bad name is blamed on chunker.name, whichever path comes first
    msg = _error({"chunker.budget": [256], "chunker.name": ["ast", "windows"]})
    assert msg.startswith("sweep.grid.chunker.name: unknown chunker 'windows'; choose one of:")
    assert _error({"chunker.budget": [256], "chunker.name": ["ast", 3]}) == (
        "sweep.grid.chunker.name: 3 is not a chunker name"
    )


def test_unknown_stage_labels_are_named_with_the_labels_there_are() -> None:
    assert _error({"retrievers.bm3.k1": [1.0]}) == (
        "sweep.grid.retrievers.bm3.k1: no retriever labelled 'bm3'; labels: bm25, exact"
    )
    assert _error({"rerankers.rr.max_candidates": [5]}) == (
        "sweep.grid.rerankers.rr.max_candidates: no reranker labelled 'rr'; labels: (none)"
    )


def test_stage_names_and_ids_are_swept_as_whole_lists() -> None:
    msg = _error({"retrievers.bm25.name": ["dense"]})
    assert msg.startswith("sweep.grid.retrievers.bm25.name: a stage's name is not swept by path")
    assert "sweep whole lists instead" in msg
    assert "a stage's id is not swept" in _error({"fusions.rrf.id": ["x"]})


@pytest.mark.parametrize("path", ["metrics.ks", "chunker.a.b", "retrievers.bm25", "llm.model", "x"])
def test_other_paths_are_not_sweepable(path: str) -> None:
    assert _error({path: [1]}).startswith(
        f"sweep.grid.{path}: not a sweepable path; use chunker, chunker.name, "
        "chunker.<param>, retrievers.<label>.<param>, fusions.<label>.<param>"
    )


def test_empty_and_repeated_alternatives_are_refused() -> None:
    assert _error({"candidates": [10], "table_k": []}) == (
        "sweep.grid.table_k: no alternatives (an empty list)"
    )
    assert _error({"candidates": [10, 20, 10]}) == (
        "sweep.grid.candidates: alternative 3 (10) repeats alternative 1; list each value once"
    )
    assert "alternative 2 ([llm-logprob]) repeats alternative 1" in _error(
        {"rerankers": [[{"name": "llm-logprob"}], ["llm-logprob"]]}
    )


def test_whole_list_alternatives_must_be_lists_of_stage_entries() -> None:
    assert _error({"rerankers": [[], "llm-logprob"]}).startswith(
        "sweep.grid.rerankers: alternative 2 (llm-logprob) is not a list of stage entries"
    )


def test_a_list_alternative_may_not_drop_a_label_another_path_sets() -> None:
    assert _error({"fusions": [["rrf"], ["vote"]], "fusions.rrf.k_rrf": [10, 60]}) == (
        "sweep.grid.fusions.rrf.k_rrf: alternative 2 of sweep.grid.fusions ([vote]) has no "
        "fusion labelled 'rrf'; set k_rrf inside that list instead"
    )
    # a list alternative may change what the label is: the parameter is checked there too
    msg = _error({"fusions": [[{"name": "vote", "id": "rrf"}]], "fusions.rrf.k_rrf": [10]})
    assert msg.startswith(
        "sweep.grid.fusions.rrf.k_rrf: unknown parameter 'k_rrf' of fusion 'vote'"
    )


# -- bad values ----------------------------------------------------------------------
def test_values_are_type_checked_and_the_path_is_named() -> None:
    assert _error({"retrievers.bm25.k1": ["abc"]}) == (
        "sweep.grid.retrievers.bm25.k1: the value abc is not valid: retrievers.0.k1: "
        "Input should be a valid number, unable to parse string as a number"
    )
    msg = _error({"candidates": [10], "retrievers.bm25.k1": [1.0, "abc"]})
    assert msg.startswith("sweep.grid.retrievers.bm25.k1: the value abc is not valid:")
    assert msg.endswith("(cell candidates=10 retrievers.bm25.k1=abc)")
    assert _error({"candidates": [5, 0]}).startswith(
        "sweep.grid.candidates: the value 0 is not valid: candidates: Input should be greater"
    )
    assert _error({"chunker.budget": [256, 8]}) == (
        "sweep.grid.chunker.budget: the value 8 is not valid: "
        "chunker (ast): budget must be at least 16 tokens"
    )
    assert _error({"fusions": [["rrf"], ["rfr"]]}).startswith(
        "sweep.grid.fusions: the value [rfr] is not valid: fusions.0.name: unknown fusion"
    )


def test_errors_of_the_whole_config_name_the_path_or_the_cell() -> None:
    base = _base(answerer={"input": "rrf"})
    with pytest.raises(ConfigError) as err:
        expand(base, SweepSpec(grid={"fusions": [["rrf"], ["vote"]]}))
    assert str(err.value).startswith(
        "sweep.grid.fusions: the value [vote] is not valid: (top level): Value error, "
        "answerer.input: 'rrf' is not a stage label"
    )
    with pytest.raises(ConfigError) as err:
        expand(
            base,
            SweepSpec(
                grid={"candidates": [5], "rerankers": [[], [{"name": "llm-yesno", "id": "rrf"}]]}
            ),
        )
    assert str(err.value).startswith(
        "sweep cell candidates=5 rerankers=[rrf]: (top level): Value error, "
        "stage labels must be unique; give an 'id' to: rrf"
    )
    assert _error({"fusions": [[{"k_rrf": 1}]]}) == (
        "sweep.grid.fusions: the value [{k_rrf:1}] is not valid: fusions.0.name: Field required"
    )


def test_errors_carry_the_source_when_given() -> None:
    with pytest.raises(ConfigError, match=r"^sweep\.yaml: sweep\.grid\.x: not a sweepable path"):
        expand(_base(), SweepSpec(grid={"x": [1]}), source="sweep.yaml")


# -- the spec and the file -----------------------------------------------------------
def _write(tmp_path: Path, data: dict[str, Any], name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))  # JSON is valid YAML
    return path


def test_load_sweep_config_splits_base_and_sweep(tmp_path: Path) -> None:
    sweep = {
        "grid": {
            "chunker.budget": [256, 512],
            "retrievers.exact.rg_path": ["bin/rg", "/usr/bin/rg"],
            "retrievers": [["bm25", {"name": "exact", "rg_path": "../rg"}]],
            "chunker": ["ast", {"name": "window", "size": 64, "cache_dir": "c"}],
        },
        "objective": "nDCG@7",
        "random": 2,
        "seed": 5,
    }
    data = {**BASE, "datasets": [{"name": "d", "questions": "q.jsonl"}], "sweep": sweep}
    base, spec = load_sweep_config(_write(tmp_path, data))
    assert base.datasets[0].questions == tmp_path / "q.jsonl"
    assert 7 in base.metrics.ks  # the objective's cut-off is computed
    assert list(spec.grid) == [
        "chunker.budget",
        "retrievers.exact.rg_path",
        "retrievers",
        "chunker",
    ]
    assert spec.grid["retrievers.exact.rg_path"] == [str(tmp_path / "bin" / "rg"), "/usr/bin/rg"]
    assert spec.grid["retrievers"] == [
        ["bm25", {"name": "exact", "rg_path": str(tmp_path.parent / "rg")}]
    ]
    assert spec.grid["chunker"] == [  # whole chunker entries: path parameters resolve too
        "ast",
        {"name": "window", "size": 64, "cache_dir": str(tmp_path / "c")},
    ]
    assert (spec.random, spec.seed, spec.select_on, spec.report_on) == (2, 5, "dev", "test")


def test_a_config_without_a_sweep_section_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE)
    with pytest.raises(ConfigError) as err:
        load_sweep_config(path)
    assert str(err.value) == f"{path} has no sweep: section; rbench run runs a plain config"


def test_toml_dotted_keys_read_as_paths(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        'name = "t"\n'
        '[[datasets]]\nname = "d"\nquestions = "q.jsonl"\n'
        '[[retrievers]]\nname = "bm25"\n'
        "[sweep.grid]\n"
        "retrievers.bm25.k1 = [0.9, 1.2]\n"
        "candidates = [20, 50]\n"
    )
    base, spec = load_sweep_config(path)
    assert spec.grid == {"retrievers.bm25.k1": [0.9, 1.2], "candidates": [20, 50]}
    assert [c.label for c in expand(base, spec)][0] == "retrievers.bm25.k1=0.9 candidates=20"


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"grid": {"candidates": 5}}, "sweep.grid.candidates: Input should be a valid list"),
        ({"grid": {}}, "sweep.grid: Dictionary should have at least 1 item"),
        (
            {"grid": {"candidates": [5]}, "random": 0},
            "sweep.random: Input should be greater than 0",
        ),
        ({"grid": {"candidates": [5]}, "objectve": "MRR"}, "sweep.objectve: Extra inputs"),
        ({"grid": {"candidates": [5]}, "objective": "Lost@5"}, "is not a quality to maximise"),
        ({"grid": {"candidates": [5]}, "objective": "acc@5"}, "'acc@5' is not a retrieval measure"),
        ({"grid": {"candidates": [5]}, "select_on": "test"}, "select_on and report_on are both"),
    ],
)
def test_bad_sweep_sections_name_the_key(tmp_path: Path, sweep: Any, message: str) -> None:
    path = _write(tmp_path, {**BASE, "sweep": sweep})
    with pytest.raises(ConfigError) as err:
        load_sweep_config(path)
    assert str(err.value).startswith(f"{path}: sweep")
    assert message in str(err.value)


def test_objectives_are_the_metrics_a_stage_is_scored_on() -> None:
    assert objective_cutoffs("Acc@5") == (5, None)
    assert objective_cutoffs("chunk_nDCG@10") == (10, None)
    assert objective_cutoffs("MRR") == objective_cutoffs("chunk_MAP") == (None, None)
    assert objective_cutoffs("F1@8k") == (None, 8000)
    assert objective_cutoffs("line_R@0.5k") == (None, 500)
    for bad in ("Acc@0", "Acc@8k", "F1@8.0k", "chunk_F1@5", "Recall@5", "MRR@5"):
        with pytest.raises(ValueError):
            objective_cutoffs(bad)
    base = _base()
    cells = expand(base, SweepSpec(grid={"candidates": [5]}, objective="F1@4k"))
    assert cells[0].config.metrics.budgets == [4000, 8000]
    assert base.metrics.budgets == [8000]

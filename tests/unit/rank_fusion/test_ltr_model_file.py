"""An ``ltr`` model file is read and checked before any work
(docs/stages.md#learning-to-rank): every failure is one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.config import parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.validate import check_stage_inputs
from retrieval_bench.rank_fusion.lambdamart import LambdaMARTModel
from retrieval_bench.rank_fusion.ltr import LTRFusion, LTRModel
from retrieval_bench.rank_fusion.ltr_fit import model_text
from tests.unit.rank_fusion.ltr_models import lambdarank_model, logistic_model

INPUTS = ["bm25", "files"]


@pytest.fixture(scope="module")
def lambdarank() -> dict[str, Any]:
    return lambdarank_model().to_dict()


@pytest.fixture(scope="module")
def logistic() -> dict[str, Any]:
    return logistic_model().to_dict()


def _check(path: Path, inputs: list[str] | None = INPUTS) -> None:
    params: dict[str, Any] = {"model_file": str(path)}
    if inputs is not None:
        params["inputs"] = inputs
    LTRFusion.check_inputs(params, {"q"}, {"q"})


def _one_line_error(path: Path, inputs: list[str] | None = INPUTS) -> str:
    with pytest.raises(ConfigError) as err:
        _check(path, inputs)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    assert str(path) in message, message
    return message


def _no_leaf_value(booster: str, tree: int) -> str:
    """The booster with ``leaf_value`` cut from one tree block (tree_sizes kept true)."""
    lines = booster.split("\n")
    start = lines.index(f"Tree={tree}")
    end = start + lines[start:].index("")
    cut = next(i for i in range(start, end) if lines[i].startswith("leaf_value="))
    removed = len(lines[cut]) + 1
    sizes = next(i for i, line in enumerate(lines) if line.startswith("tree_sizes="))
    values = lines[sizes].removeprefix("tree_sizes=").split(" ")
    values[tree] = str(int(values[tree]) - removed)
    lines[sizes] = "tree_sizes=" + " ".join(values)
    del lines[cut]
    return "\n".join(lines)


def test_good_model_files_pass(tmp_path: Path, lambdarank: dict[str, Any],
                               logistic: dict[str, Any]) -> None:  # fmt: skip
    for name, data in (("lm.json", lambdarank), ("lr.json", logistic)):
        (tmp_path / name).write_text(json.dumps(data))
        _check(tmp_path / name)
        _check(tmp_path / name, [*INPUTS, "extra"])  # stages the model ignores are fine
        _check(tmp_path / name, None)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "not found (write one with rbench fit-ltr)"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "is not UTF-8 text"),
        (b"{not json", "is not JSON (Expecting property name"),
        (b"[1, 2]", "is not an ltr model file (a JSON list, not an object)"),
        (b'{"format": "other"}', "is not an ltr model file (format 'other'"),
        (b'{"format": "retrieval_bench.fusion.ltr/1", "sources": "bm25"}',
         "is malformed: sources: not a list of stage labels"),
    ],
)  # fmt: skip
def test_unreadable_files(tmp_path: Path, content: bytes | None, expected: str) -> None:
    path = tmp_path / "model.json"
    if content is not None:
        path.write_bytes(content)
    message = _one_line_error(path)
    assert message.startswith(f"ltr: model file {path}")
    assert expected in message, message


def test_a_folder(tmp_path: Path) -> None:
    assert _one_line_error(tmp_path).endswith("is a folder, not a file")


def test_every_fold_model_is_checked(tmp_path: Path, logistic: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(logistic))
    broken["folds"][1]["model"]["coef"] = [1.0]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(broken))
    message = _one_line_error(path)
    n = len(logistic["feature_names"])
    assert message == f"ltr: model file {path} is malformed: folds.1: expected {n} values per array"
    del broken["folds"][0]["query_ids"]
    path.write_text(json.dumps(broken))
    assert _one_line_error(path).endswith("is malformed: folds.0: no 'query_ids'")


def test_a_tree_without_leaf_value_in_a_dataset_fold(
    tmp_path: Path, lambdarank: dict[str, Any]
) -> None:
    """LightGBM would abort the process (``terminate called``); the check stops first."""
    broken = json.loads(json.dumps(lambdarank))
    assert lambdarank["training"]["cross_fit"] == "dataset"
    booster = broken["folds"][1]["model"]["booster"]
    broken["folds"][1]["model"]["booster"] = _no_leaf_value(booster, 3)
    path = tmp_path / "lm.json"
    path.write_text(json.dumps(broken))
    message = _one_line_error(path)
    assert message.endswith("is malformed: folds.1: booster: Tree=3: no leaf_value"), message


def test_a_booster_lightgbm_refuses(
    tmp_path: Path, lambdarank: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import lightgbm

    class Refusing:
        def __init__(self, **_: Any) -> None:
            raise lightgbm.basic.LightGBMError("Unknown model format\nor version")

    monkeypatch.setattr(lightgbm, "Booster", Refusing)
    path = tmp_path / "lm.json"
    path.write_text(json.dumps(lambdarank))
    message = _one_line_error(path)
    assert message.endswith(
        "is malformed: full: booster: LightGBM cannot load it (Unknown model format or version)"
    ), message


def test_sources_must_be_among_the_inputs(tmp_path: Path, logistic: dict[str, Any]) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(logistic))
    message = _one_line_error(path, ["bm25", "dense"])
    assert message == (
        f"ltr: model file {path} was fitted on stages ['bm25', 'files'], but ['files'] is "
        "not among this stage's inputs ['bm25', 'dense'] (add them, with the parameters "
        "they had, or re-fit)"
    )


def _config(tmp_path: Path, fusion: dict[str, Any], retrievers: list[str]) -> Any:
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q", "query": "x", "gold_files": ["a.py"]}) + "\n")
    data = {
        "name": "t",
        "datasets": [{"name": "d", "questions": str(q), "snapshot": str(tmp_path)}],
        "retrievers": [
            {"name": "bm25-files" if r == "files" else r, "id": r} for r in retrievers
        ],  # fmt: skip
        "fusions": [fusion],
    }
    return parse_config(data, "cfg.yaml", tmp_path)


def test_the_harness_passes_the_resolved_inputs(tmp_path: Path, logistic: dict[str, Any]) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(logistic))
    fusion = {"name": "ltr", "model_file": str(path)}
    check_stage_inputs([_config(tmp_path, fusion, ["bm25", "files"])])
    with pytest.raises(ConfigError) as err:  # default inputs: every retriever
        check_stage_inputs([_config(tmp_path, fusion, ["bm25", "exact"])])
    assert str(err.value).startswith(f"fusions.0 (ltr): ltr: model file {path} was fitted on")
    with pytest.raises(ConfigError, match=r"not among this stage's inputs \['bm25'\]"):
        check_stage_inputs([_config(tmp_path, {**fusion, "inputs": ["bm25"]},
                                    ["bm25", "files"])])  # fmt: skip


def test_a_checked_booster_predicts_as_the_fitted_one(lambdarank: dict[str, Any]) -> None:
    """LightGBM reads the header and trees only; the predictions are the same."""
    model = LTRModel.from_dict(lambdarank)
    assert isinstance(model.full, LambdaMARTModel) and model.full.checked
    assert "parameters:" not in model.full.checked and "parameters:" in model.full.text
    fitted = LambdaMARTModel(model.full.text)
    x = np.random.default_rng(0).random((30, len(model.feature_names)))
    assert (model.full.predict(x) == fitted.predict(x)).all()
    assert json.loads(model_text(model))["full"]["booster"] == lambdarank["full"]["booster"]

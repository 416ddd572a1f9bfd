"""``rbench fit-functions``' fitting and the ``function-ranker`` model file: a fit on
synthetic rows where one feature gives the label, the fold chosen per question and per
dataset, and a bad model file refused in one line (docs/stages.md#function-ranker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.function_features import feature_names
from retrieval_bench.rank_fusion.function_fit import (
    FunctionTraining,
    fit_functions,
    ranking_scores,
)
from retrieval_bench.rank_fusion.function_model import FunctionModel
from retrieval_bench.rank_fusion.function_ranker import FunctionRanker
from tests.unit.rank_fusion.function_fixtures import chunk_run, write_corpus

SOURCES = ["bm25"]
KEY = "name:in_issue"


def training(n: int = 40, cands: int = 6, seed: int = 1) -> FunctionTraining:
    """Questions ``repo-a:q…``/``repo-b:q…``; random features but for ``name:in_issue``,
    1 exactly for the one gold candidate."""
    rng = np.random.default_rng(seed)
    names = feature_names(SOURCES)
    data = FunctionTraining("fr", list(SOURCES))
    for i in range(n):
        repo = "repo-" + "ab"[i % 2]
        q = f"{repo}:q{i}"
        entities = [f"m{i}.py:f{j}" for j in range(cands)]
        x = rng.random((cands, len(names))).round(4)
        gold = int(rng.integers(cands))
        x[:, names.index(KEY)] = 0.0
        x[gold, names.index(KEY)] = 1.0
        data.rows[q] = (entities, x)
        data.gold[q] = frozenset({entities[gold]})
        data.datasets[q] = repo
    data.dropped = {"no_features": 0, "no_gold_functions": 2, "no_gold_candidate": 1}
    return data


@pytest.fixture(scope="module")
def model() -> FunctionModel:
    return fit_functions(training(), cross_fit="dataset", rounds=30)


def test_the_labelling_feature_ranks_gold_first(model: FunctionModel) -> None:
    data = training()
    for q in data.query_ids:
        cands, x = data.rows[q]
        for booster in (model.full, model.model_for(q)[0]):
            assert cands[int(np.argmax(booster.predict(x)))] in data.gold[q], q
    t = model.meta["training"]
    assert (t["questions"], t["rows"], t["gold_rows"], t["folds"]) == (40, 240, 40, 2)
    assert t["dropped"]["no_gold_functions"] == 2 and t["seed"] == 0
    assert {"lightgbm", "numpy", "python", "retrieval_bench"} <= set(t["versions"])
    oof = model.meta["out_of_fold"]
    assert oof["questions"] == 40 and oof["model"]["function_MRR"] == 1.0
    assert set(oof["per_dataset"]) == {"repo-a", "repo-b"}


def test_a_fold_per_dataset_scores_its_questions(model: FunctionModel) -> None:
    folds = {f.dataset: f for f in model.folds}
    assert set(folds) == {"repo-a", "repo-b"}
    assert folds["repo-a"].query_ids == {f"repo-a:q{i}" for i in range(0, 40, 2)}
    assert model.model_for("repo-a:q0") == (folds["repo-a"].model, True)
    # a question the model never saw: its dataset's fold when its id names one, else full
    assert model.model_for("repo-b:new") == (folds["repo-b"].model, True)
    assert model.model_for("new") == (model.full, False)
    assert model.model_for("repo-c:q1") == (model.full, False)


def test_hash_and_no_cross_fitting() -> None:
    hashed = fit_functions(training(), cross_fit="hash", folds=2, rounds=5)
    assert len(hashed.folds) == 2 and all(f.dataset is None for f in hashed.folds)
    assert not fit_functions(training(), cross_fit="none", rounds=5).folds
    with pytest.raises(ConfigError, match="at least 2 folds"):
        data = training()
        data.datasets = dict.fromkeys(data.datasets, "one")
        fit_functions(data, cross_fit="dataset", rounds=5)


def test_ranking_scores() -> None:
    order = ["a", "b", "c", "d", "e", "f"]
    assert ranking_scores(order, frozenset({"b", "e"})) == (1.0, 0.5)
    assert ranking_scores(order, frozenset({"b", "f"})) == (0.0, 0.5)
    assert ranking_scores(order, frozenset({"z"})) == (0.0, 0.0)


def test_the_model_file_round_trips_and_scores_in_the_stage(
    model: FunctionModel, tmp_path: Path
) -> None:
    path = tmp_path / "fr.json"
    path.write_text(json.dumps(model.to_dict()))
    loaded = FunctionModel.load(path)
    assert loaded.sources == SOURCES and loaded.feature_names == feature_names(SOURCES)
    assert [(f.dataset, f.query_ids) for f in loaded.folds] == [
        (f.dataset, f.query_ids) for f in model.folds]  # fmt: skip
    corpus = write_corpus(tmp_path / "repo")
    fusion = FunctionRanker(model_file=str(path), record_features=True)
    fusion.corpus = corpus
    fusion.queries = {"q": "round_cents is wrong", "repo-a:q0": "log_event"}
    run = chunk_run(corpus, "bm25", ["shop/util.py", "shop/cart.py"])
    run.scores["repo-a:q0"] = run.scores["q"]
    fused = fusion.fuse([run], k=10)
    assert fused.ids("q")[0] == "entity:shop/util.py:round_cents"  # named in the issue
    assert fused.ids("repo-a:q0")[0] == "entity:shop/util.py:log_event"
    assert fusion.scored_by == {"held_out_fold": 1, "full_model": 1, "untrained": 0}
    FunctionRanker.check_inputs({"model_file": str(path), "inputs": ["bm25", "x"]}, [], [])
    with pytest.raises(ConfigError, match=r"fitted on stages \['bm25'\].*not among"):
        FunctionRanker.check_inputs({"model_file": str(path), "inputs": ["files"]}, [], [])
    with pytest.raises(ConfigError, match=r"lacks \['bm25'\]"):
        fusion.fuse([run.renamed("files")], k=10)


def _broken(data: dict[str, Any], what: str) -> Any:
    if what == "kind":
        return {**data, "kind": "ltr"}
    if what == "features":
        return {**data, "feature_names": data["feature_names"][:-1]}
    if what == "sources":
        return {**data, "sources": []}
    if what == "fold booster":
        fold = data["folds"][1]
        booster = fold["model"]["booster"].replace("leaf_value=", "leaf_vaLue=", 1)
        folds = [data["folds"][0], {**fold, "model": {**fold["model"], "booster": booster}}]
        return {**data, "folds": folds}
    if what == "fold ids":
        return {**data, "folds": [{**data["folds"][0], "query_ids": "q1"}]}
    return [data]


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("kind", "is not a function-ranker model file"),
        ("features", "is malformed: feature_names: feature names do not match"),
        ("sources", "is malformed: sources: not a list of stage labels"),
        ("fold booster", "is malformed: folds.1: booster: Tree=0: no leaf_value"),
        ("fold ids", "is malformed: folds.0: query_ids is not a list"),
        ("list", "is not a function-ranker model file"),
    ],
)
def test_a_malformed_model_file_is_one_config_error(
    model: FunctionModel, tmp_path: Path, what: str, message: str
) -> None:
    path = tmp_path / f"{what.replace(' ', '-')}.json"
    path.write_text(json.dumps(_broken(model.to_dict(), what)))
    with pytest.raises(ConfigError, match=f"model file {path} {message}"):
        FunctionRanker.check_inputs({"model_file": str(path)}, [], [])
    with pytest.raises(ConfigError, match="function-ranker: model file"):
        FunctionRanker(model_file=str(path))


def test_missing_folder_and_non_json_model_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found .write one with rbench fit-functions"):
        FunctionModel.load(tmp_path / "none.json")
    with pytest.raises(ConfigError, match="is a folder"):
        FunctionModel.load(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="is not JSON"):
        FunctionModel.load(tmp_path / "bad.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="is not UTF-8"):
        FunctionModel.load(tmp_path / "bin.json")


def test_a_dataset_fold_holds_out_the_questions_dropped_from_training() -> None:
    """A question of a training repository that taught nothing (no gold function among
    its candidates) is still scored by the fold that never saw its repository."""
    data = training()
    data.asked = {"repo-a": {"repo-a:q0", "dropped-a"}, "repo-b": {"repo-b:q1"}}
    fitted = fit_functions(data, cross_fit="dataset", rounds=5)
    folds = {f.dataset: f for f in fitted.folds}
    assert "dropped-a" in folds["repo-a"].query_ids
    assert fitted.model_for("dropped-a") == (folds["repo-a"].model, True)

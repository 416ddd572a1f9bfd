"""The ``ltr`` fusion, its file-level features and cross-fitted fitting (fusion/ltr*.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.cli.parser import build_parser
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.ltr import LinearModel, LTRFusion, LTRModel
from retrieval_bench.rank_fusion.ltr_features import (
    PRIORS,
    feature_names,
    lift_to_files,
    path_priors,
)
from retrieval_bench.rank_fusion.ltr_fit import (
    TrainingSet,
    _rows,
    fit_linear,
    fit_ltr,
    fold_of,
    load_training,
    write_model,
)
from retrieval_bench.rank_fusion.ltr_selection import file_metric
from retrieval_bench.runs.file_ids import doc_path
from retrieval_bench.store.trec import write_run
from retrieval_bench.types import Run

FILES = [f"pkg/m{i}.py" for i in range(5)]


def test_doc_path_reads_file_and_chunk_ids() -> None:
    assert doc_path("file:src/a.py") == "src/a.py"
    assert doc_path("src/a.py:3-9:0123abcd") == "src/a.py"
    assert doc_path("odd:name.py:1-2:ff") == "odd:name.py"


def test_lift_keeps_each_files_best_chunk() -> None:
    run = Run("r", {"q": {"a.py:1-5:aa": 1.0, "a.py:6-9:bb": 3.0, "file:b.py": 2.0}})
    assert lift_to_files(run).scores == {"q": {"file:a.py": 3.0, "file:b.py": 2.0}}
    assert lift_to_files(run).name == "r"


def test_path_priors() -> None:
    assert path_priors("tests/test_x.py") == (1.0, 0.0, 0.0, 0.1)
    assert path_priors("docs/conf.py") == (0.0, 1.0, 0.0, 0.1)
    assert path_priors("src/pkg/__init__.py") == (0.0, 0.0, 1.0, 0.2)
    assert path_priors("setup.py") == (0.0, 0.0, 0.0, 0.0)
    assert feature_names(["b", "a"])[-4:] == list(PRIORS)


def _training(n: int, flip_fold: int | None = None) -> TrainingSet:
    """``good`` ranks the gold file first; ``noise`` ranks files in a fixed order.

    With ``flip_fold`` set, the questions of that fold (of 2) have ``good``
    ranking the gold file *last*, so what one fold teaches is wrong on the other.
    """
    data = TrainingSet(["good", "noise"])
    good: dict[str, dict[str, float]] = {}
    noise: dict[str, dict[str, float]] = {}
    for i in range(n):
        q = f"q{i}"
        gold = FILES[i % 5]
        flipped = flip_fold is not None and fold_of(q, 2) == flip_fold
        others = [f for f in FILES if f != gold]
        order = [*others, gold] if flipped else [gold, *others]
        good[q] = {f"file:{f}": float(5 - r) for r, f in enumerate(order)}
        noise[q] = {f"file:{f}": float(5 - r) for r, f in enumerate(FILES)}
        data.gold[q] = frozenset({gold})
    data.runs = {"good": Run("good", good), "noise": Run("noise", noise)}
    return data


def test_fit_learns_the_good_source_and_cross_fits() -> None:
    data = _training(40)
    model = fit_ltr(data, folds=4, objective="Acc@1")
    coefs = model.coefficients()
    assert coefs["good:score"] > 0 and coefs["good:score"] > abs(coefs["noise:score"])
    sel = model.meta["selection"]
    assert sel["ltr_out_of_fold"] == 1.0 and sel["inputs"]["good"] == 1.0
    assert sel["inputs"]["noise"] == pytest.approx(0.2)
    assert sel["significantly_worse"] is False
    # each fold model is the fit on the other folds' questions, and scores only its own
    held = [ids for _, ids in model.folds]
    assert sorted(q for ids in held for q in ids) == sorted(data.gold)
    for fold_model, ids in model.folds:
        rest = [q for q in data.query_ids if q not in ids]
        x, y, _ = _rows(data, rest)
        expected = fit_linear(x, y)
        np.testing.assert_allclose(fold_model.coef, expected.coef)
        q = sorted(ids)[0]
        assert model.model_for(q) == (fold_model, True)
    assert model.model_for("never-seen") == (model.full, False)


def test_selection_flags_a_model_worse_than_its_best_input() -> None:
    data = _training(40, flip_fold=1)
    model = fit_ltr(data, folds=2, objective="Acc@1")
    sel = model.meta["selection"]
    assert sel["best_input"] == "good"
    assert sel["ltr_out_of_fold"] < sel["inputs"]["good"]
    assert sel["p_value"] < 0.05 and sel["significantly_worse"] is True


def test_file_metric() -> None:
    ranked = ["a", "b", "c"]
    assert file_metric(ranked, frozenset({"b"}), "Acc@1") == 0.0
    assert file_metric(ranked, frozenset({"b"}), "Acc@3") == 1.0
    assert file_metric(ranked, frozenset({"b", "z"}), "R@10") == 0.5
    assert file_metric(ranked, frozenset({"b", "z"}), "Acc@3") == 0.0  # every gold file
    assert file_metric(ranked, frozenset({"b", "z"}), "Hit@3") == 1.0
    assert file_metric(ranked, frozenset({"a", "c"}), "Acc@3") == 1.0
    assert file_metric(ranked, frozenset({"c"}), "MRR") == pytest.approx(1 / 3)
    with pytest.raises(ConfigError, match="objective"):
        file_metric(ranked, frozenset({"c"}), "nDCG@3")


def test_fusion_scores_with_the_saved_model(tmp_path: Path) -> None:
    model = fit_ltr(_training(40), folds=4, objective="Acc@1")
    path = tmp_path / "m.json"
    write_model(model, path)
    fusion = LTRFusion(model_file=str(path))
    # an unseen question: chunk ids are lifted; the full model ranks good's top file first
    good = Run("good", {"new": {"pkg/m3.py:1-4:aa": 9.0, "pkg/m1.py:1-2:bb": 1.0}})
    noise = Run("noise", {"new": {"file:pkg/m1.py": 5.0, "file:pkg/m3.py": 1.0}})
    extra = Run("extra", {"new": {"file:zzz.py": 100.0}})  # not a source: ignored
    fused = fusion.fuse([good, extra, noise], k=10)
    assert fused.ids("new") == ["file:pkg/m3.py", "file:pkg/m1.py"]
    assert fusion.scored_by == {"held_out_fold": 0, "full_model": 1}
    # a training question is scored by its held-out fold model
    assert LTRModel.load(path).model_for("q0")[1] is True
    fusion.fuse([Run("good", {"q0": {"file:a.py": 1.0}}), Run("noise", {})], k=10)
    assert fusion.scored_by == {"held_out_fold": 1, "full_model": 0}
    with pytest.raises(ConfigError, match="lacks \\['noise'\\]"):
        fusion.fuse([good], k=10)


def test_model_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        LTRFusion(model_file=str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(ConfigError, match="not an ltr model file"):
        LTRFusion(model_file=str(bad))
    model = fit_ltr(_training(20), folds=2, objective="Acc@1").to_dict()
    model["full"]["coef"] = [1.0]
    bad.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match="malformed"):
        LTRFusion(model_file=str(bad))
    with pytest.raises(ConfigError, match="model_file: Field required"):
        LTRFusion()
    with pytest.raises(ConfigError, match="unknown parameter 'model'"):
        LTRFusion(model=str(bad))


def test_model_file_as_a_path_or_params(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_model(fit_ltr(_training(20), folds=2, objective="Acc@1"), path)
    by_path = LTRFusion(model_file=path)
    assert by_path.model_file == str(path) and by_path.params == LTRFusion.Params.of(
        {"model_file": str(path)}
    )
    assert LTRFusion(LTRFusion.Params(model_file=str(path))).model is by_path.model


def _stored_run(root: Path, run_id: str, hash_split: float | None = None) -> Path:
    """A run folder as ``rbench run`` writes it, for the good/noise sources."""
    data = _training(30)
    run_dir = root / run_id
    questions = root / "questions.jsonl"
    with questions.open("w") as fh:
        for q in data.query_ids:
            row = {"id": q, "query": "x", "gold_files": sorted(data.gold[q]),
                   "split": "dev" if int(q[1:]) % 3 else "test"}  # fmt: skip
            fh.write(json.dumps(row) + "\n")
    (run_dir / "runs" / "ds").mkdir(parents=True)
    spec = {"name": "ds", "questions": str(questions), "hash_split": hash_split}
    (run_dir / "config.json").write_text(
        json.dumps({"config": {"datasets": [spec]}, "provenance": {"dataset_fingerprint": "f"}})
    )
    with (run_dir / "queries.jsonl").open("w") as fh:
        for q in data.query_ids:
            fh.write(json.dumps({"dataset": "ds", "query_id": q,
                                 "gold_files": sorted(data.gold[q])}) + "\n")  # fmt: skip
    for name, run in data.runs.items():
        write_run(run_dir / "runs" / "ds" / f"{name}.trec", run)
    return run_dir


def test_load_training_from_a_stored_run(tmp_path: Path) -> None:
    run_dir = _stored_run(tmp_path, "r1")
    data = load_training([run_dir], ["noise", "good"])
    assert data.sources == ["good", "noise"] and len(data.gold) == 30
    assert data.runs["good"].ids("q4")[0] == "file:pkg/m4.py"
    assert data.origins[0]["run"] == "r1" and data.origins[0]["questions"] == 30
    dev = load_training([run_dir], ["good"], split="dev")
    assert sorted(dev.gold) == sorted(f"q{i}" for i in range(30) if i % 3)
    with pytest.raises(ConfigError, match="no stage 'dense'"):
        load_training([run_dir], ["dense"])
    with pytest.raises(ConfigError, match="no labelled question"):
        load_training([run_dir], ["good"], split="nope")


def test_load_training_uses_the_runs_hash_split(tmp_path: Path) -> None:
    run_dir = _stored_run(tmp_path, "r2", hash_split=0.5)
    test = load_training([run_dir], ["good"], split="test")
    dev = load_training([run_dir], ["good"], split="dev")
    assert set(test.gold).isdisjoint(dev.gold) and len(test.gold) + len(dev.gold) == 30
    assert 5 < len(test.gold) < 25  # a hash half, not the rows' own 1-in-3 test split


def test_cli_fit_ltr_writes_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _stored_run(tmp_path, "r3")
    out = tmp_path / "model.json"
    args = build_parser().parse_args(
        ["fit-ltr", str(run_dir), "--sources", "good,noise", "--out", str(out),
         "--folds", "3", "--objective", "Acc@1"]
    )  # fmt: skip
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "30 questions" in printed and "best input good 1.000" in printed
    saved = json.loads(out.read_text())
    assert saved["training"]["runs"][0]["dataset_fingerprint"] == "f"
    assert len(saved["folds"]) == 3
    assert LTRModel.load(out).sources == ["good", "noise"]


def _two_repos(n: int) -> TrainingSet:
    """``_training`` with ids ``repo-a:q…`` and ``repo-b:q…`` (a run of two datasets)."""
    base = _training(n)
    data = TrainingSet(base.sources)
    for q, gold in base.gold.items():
        data.gold[f"repo-{'ab'[int(q[1:]) % 2]}:{q}"] = gold
    data.runs = {
        s: Run(s, {f"repo-{'ab'[int(q[1:]) % 2]}:{q}": d for q, d in run.scores.items()})
        for s, run in base.runs.items()
    }
    return data


def test_lambdarank_learns_the_good_source_and_round_trips(tmp_path: Path) -> None:
    data = _two_repos(80)
    model = fit_ltr(data, objective="Acc@1", model="lambdarank", cross_fit="dataset")
    assert model.meta["training"]["model"].startswith("LightGBM lambdarank")
    sel = model.meta["selection"]
    assert sel["ltr_out_of_fold"] == 1.0 and sel["best_input"] == "good"
    assert sel["delta_vs_best_input"] == 0.0 and sel["delta_ci95"] == [0.0, 0.0]
    # one fold per repository: each repository's questions scored by the other's model
    assert sorted(sel["per_dataset"]) == ["repo-a", "repo-b"]
    assert {len(ids) for _, ids in model.folds} == {40}
    for _, ids in model.folds:
        assert len({q.split(":")[0] for q in ids}) == 1
    assert model.coefficients() == {}
    path = tmp_path / "lm.json"
    write_model(model, path)
    again = LTRModel.load(path)
    x = data.features(data.query_ids[0])[1]
    np.testing.assert_array_equal(again.full.predict(x), model.full.predict(x))
    fused = LTRFusion(model_file=str(path)).fuse(
        [Run("good", {"new": {"file:a.py": 2.0, "file:b.py": 1.0}}),
         Run("noise", {"new": {"file:b.py": 2.0, "file:a.py": 1.0}})], k=5,
    )  # fmt: skip
    assert fused.ids("new") == ["file:a.py", "file:b.py"]
    # read once per process while the file is unchanged; a rewritten file is read anew
    assert LTRModel.load(path) is again and LTRFusion(model_file=str(path)).model is again
    logistic = fit_ltr(data, folds=2, objective="Acc@1")
    write_model(logistic, path)
    os.utime(path, ns=(1, 1))  # a new modification time even on a coarse clock
    reread = LTRModel.load(path)
    assert reread is not again and isinstance(reread.full, LinearModel)


def test_lambdarank_is_reproducible_and_model_kinds_are_checked() -> None:
    data = _two_repos(40)
    a = fit_ltr(data, folds=2, objective="Acc@1", model="lambdarank")
    b = fit_ltr(data, folds=2, objective="Acc@1", model="lambdarank")
    assert a.to_dict()["full"] == b.to_dict()["full"]
    with pytest.raises(ConfigError, match="model must be one of"):
        fit_ltr(data, model="svm")
    broken = a.to_dict()
    broken["full"]["booster"] = broken["full"]["booster"].replace("max_feature_idx=", "x=")
    with pytest.raises(ConfigError, match="model is malformed: full: "):
        LTRModel.from_dict(broken)


def test_query_path_features_by_hand() -> None:
    from retrieval_bench.rank_fusion.ltr_features import query_path_features

    q = "L031 triggers in tsql when no join; the test_aliases test fails"
    # path tokens: src, sqlfluff, rules, l031, 031 (letters and digits split); the
    # question holds l031 and 031: 2 of 5
    assert query_path_features(q, "src/sqlfluff/rules/L031.py") == (0.4, 1.0, 0.0)
    # aliases is a token of the question (inside test_aliases) but not a word of it
    assert query_path_features(q, "src/aliases.py") == (0.5, 0.0, 1.0)
    assert query_path_features(q, "pkg/__init__.py") == (0.0, 0.0, 0.0)


def test_query_features_reach_the_model_file_and_the_fusion(tmp_path: Path) -> None:
    data = _two_repos(40)
    data.query_features = True
    data.queries = {q: f"fix {sorted(data.gold[q])[0].rsplit('/', 1)[1][:-3]}" for q in data.gold}
    model = fit_ltr(data, folds=2, objective="Acc@1")
    assert model.feature_names[-3:] == ["query:path_overlap", "query:stem", "query:test_of"]
    path = tmp_path / "q.json"
    write_model(model, path)
    fusion = LTRFusion(model_file=str(path))
    assert fusion.needs_queries and LTRModel.load(path).query_features
    fusion.queries = {"new": "fix m4"}
    runs = [Run("good", {"new": {"file:pkg/m4.py": 1.0, "file:pkg/m1.py": 2.0}}), Run("noise", {})]
    assert fusion.fuse(runs, k=5).ids("new")  # scored with the text
    with pytest.raises(ConfigError, match="reads the questions' text"):
        from retrieval_bench.rank_fusion.ltr import fuse_with

        fuse_with(LTRModel.load(path), runs, "x", 5)

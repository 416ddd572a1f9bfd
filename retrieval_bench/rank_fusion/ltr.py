"""``ltr``: learning to rank over file-level features, with a cross-fitted model file.

The learned-fusion rung for per-question snapshots (docs/stages.md#learning-to-rank).
The ``learned`` fusion fits on a ``train_split`` of the *same* snapshot; a
benchmark with one repository state per question has no such split. Here the
model is fitted once, outside the run, by ``rbench fit-ltr`` on the stored runs
of *other* questions (e.g. pairs mined from git histories:
:mod:`retrieval_bench.rank_fusion.ltr_fit`), and the config names the model file:

    fusions:
      - {name: ltr, model_file: ltr-history.json}

Models: pointwise logistic regression (the default), or LambdaMART (LightGBM's
``lambdarank``: :mod:`retrieval_bench.rank_fusion.lambdamart`), over the features of
:mod:`retrieval_bench.rank_fusion.ltr_features` (per-source score, reciprocal rank,
presence, ``n_sources`` and the path priors), standardised with the training
mean and scale — the linear fusion of Vogt & Cottrell (1999) as a learning-to-rank
model (Cooper, Gey & Dabney, SIGIR 1992). The fused score of a file is the
predicted probability of relevance; ties break by id.

Cross-fitting (Chernozhukov et al., "Double/debiased machine learning", 2018, §3):
the model file holds one model per fold, each fitted without that fold's
questions, and the model fitted on all of them. A question the model was
trained on is scored by the fold model that did not see it; any other question
by the full model. So no question is ever scored by a model trained on it, and
the stage reports how many questions each kind scored
(:attr:`LTRFusion.scored_by`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.lambdamart import KIND as LAMBDARANK
from retrieval_bench.rank_fusion.lambdamart import LambdaMARTModel
from retrieval_bench.rank_fusion.ltr_features import feature_names, file_features, lift_to_files
from retrieval_bench.rank_fusion.model_files import (
    check_sources,
    file_key,
    path_as_text,
    read_model_json,
)
from retrieval_bench.types import Run

FloatArray = npt.NDArray[np.float64]
FORMAT = "retrieval_bench.fusion.ltr/1"  # a file-format id: stays as first written


@dataclass(frozen=True)
class LinearModel:
    """A standardised logistic regression: ``σ(b + Σ c_j (x_j - mean_j) / scale_j)``."""

    mean: FloatArray
    scale: FloatArray
    coef: FloatArray
    intercept: float

    def predict(self, x: FloatArray) -> FloatArray:
        """Probability of relevance for rows of raw features."""
        z = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], n_features: int) -> LinearModel:
        arrays = [np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "coef")]
        if any(a.shape != (n_features,) for a in arrays):
            raise ValueError(f"expected {n_features} values per array")
        return cls(arrays[0], arrays[1], arrays[2], float(data["intercept"]))


RankModel = LinearModel | LambdaMARTModel
"""A fitted model: ``predict(rows) -> scores``, ``to_dict()``."""


def model_from_dict(data: Mapping[str, Any], n_features: int) -> RankModel:
    """The model a file's ``full`` or fold entry holds (``kind``: ``lambdarank``, or
    none for the logistic model files written before the key)."""
    if data.get("kind") == LAMBDARANK:
        return LambdaMARTModel.from_dict(data, n_features)
    return LinearModel.from_dict(data, n_features)


@dataclass(frozen=True)
class LTRModel:
    """The contents of a model file: sources, the full model and the fold models."""

    sources: list[str]
    full: RankModel
    folds: list[tuple[RankModel, frozenset[str]]]
    """(model fitted without these questions, the questions)."""
    meta: dict[str, Any]

    @property
    def query_features(self) -> bool:
        """Whether the model reads the question's text (``fit-ltr --query-features``)."""
        return bool(self.meta.get("query_features", False))

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.sources, self.query_features)

    def model_for(self, query_id: str) -> tuple[RankModel, bool]:
        """(the model to score ``query_id`` with, whether it is a held-out fold model)."""
        for model, held_out in self.folds:
            if query_id in held_out:
                return model, True
        return self.full, False

    def coefficients(self) -> dict[str, float]:
        """Feature → coefficient of a logistic full model (on standardised features);
        empty for LambdaMART."""
        if not isinstance(self.full, LinearModel):
            return {}
        return dict(zip(self.feature_names, self.full.coef.tolist(), strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "sources": list(self.sources),
            "feature_names": self.feature_names,
            "full": self.full.to_dict(),
            "folds": [{"model": m.to_dict(), "query_ids": sorted(ids)} for m, ids in self.folds],
            **self.meta,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> LTRModel:
        """The model of a file's JSON (read from ``source``, named in the messages);
        a :class:`ConfigError` says what is wrong and where (``folds.2: ...``): every
        fold model is read, and every booster checked and loaded, so a bad one fails
        here rather than on the questions it would score."""
        name = f"model file {source}" if source is not None else "model"
        if not isinstance(data, Mapping):
            raise ConfigError(f"ltr: {name} is not an ltr model file (a JSON "
                              f"{type(data).__name__}, not an object)")  # fmt: skip
        if data.get("format") != FORMAT:
            raise ConfigError(
                f"ltr: {name} is not an ltr model file (format {data.get('format')!r}, "
                f"expected {FORMAT!r})"
            )
        where = "sources"
        try:
            if not isinstance(data["sources"], list) or not data["sources"]:
                raise ValueError("not a list of stage labels")
            sources = [str(s) for s in data["sources"]]
            names = feature_names(sources, bool(data.get("query_features", False)))
            n = len(names)
            where = "feature_names"
            if list(data.get("feature_names", names)) != names:
                raise ValueError("feature names do not match this version's features")
            where = "full"
            full = model_from_dict(data["full"], n)
            where = "folds"
            folds = []
            for i, fold in enumerate(data.get("folds", [])):
                where = f"folds.{i}"
                ids = frozenset(str(q) for q in fold["query_ids"])
                folds.append((model_from_dict(fold["model"], n), ids))
        except KeyError as exc:
            raise ConfigError(f"ltr: {name} is malformed: {where}: no {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"ltr: {name} is malformed: {where}: {exc}") from None
        meta = {
            k: v
            for k, v in data.items()
            if k not in ("format", "sources", "feature_names", "full", "folds")
        }
        return cls(sources, full, folds, meta)

    @classmethod
    def load(cls, path: str | Path) -> LTRModel:
        """Read a model file written by ``rbench fit-ltr``; one process reads a file
        once while it is unchanged (same size and modification time), since a run
        builds the fusion once per snapshot and parsing the file and its LightGBM
        boosters took longer than scoring a question."""
        return _load_model(*file_key(path, "ltr", "fit-ltr"))


@lru_cache(maxsize=8)
def _load_model(path: str, mtime_ns: int, size: int) -> LTRModel:
    """:meth:`LTRModel.load` of ``path`` as it is at ``mtime_ns``/``size`` (the key);
    every problem is a one-line :class:`ConfigError` naming the file."""
    data = read_model_json(path, "ltr", "fit-ltr")
    return LTRModel.from_dict(data, path)


def fuse_with(
    model: LTRModel,
    runs: Sequence[Run],
    name: str,
    k: int,
    queries: Mapping[str, str] | None = None,
) -> tuple[Run, dict[str, int]]:
    """Score every candidate file of ``runs`` with ``model`` (module doc); also count
    the questions scored by a held-out fold model and by the full model. A model
    with query features reads each question's text from ``queries``."""
    if model.query_features and queries is None:
        raise ConfigError("ltr: this model reads the questions' text; none was given")
    file_runs = {run.name: lift_to_files(run) for run in runs}
    fused: dict[str, dict[str, float]] = {}
    counts = {"held_out_fold": 0, "full_model": 0}
    for q in query_ids(runs):
        text = (queries or {}).get(q, "") if model.query_features else None
        cands, x = file_features(file_runs, model.sources, q, text)
        linear, held_out = model.model_for(q)
        counts["held_out_fold" if held_out else "full_model"] += 1
        probs = linear.predict(x).tolist() if cands else []
        fused[q] = dict(zip(cands, probs, strict=True))
    return Run(name, fused).truncated(k), counts


class LTRFusion(Fusion):
    """Score files with a model fitted by ``rbench fit-ltr`` (module doc).

    Only the model's sources are read (candidates and features); the run's
    other stages are ignored.

    Parameters:
        model_file: the model file (relative paths resolve against the config's folder).
        name: the name of the fused run.
    """

    needs_queries = True
    ranks = "files"

    class Params(StageParams):
        model_file: str

        _path_as_text = field_validator("model_file", mode="before")(path_as_text)

    params: LTRFusion.Params

    def __init__(
        self, params: LTRFusion.Params | None = None, /, *, name: str = "ltr", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.model_file = p.model_file
        self.model = LTRModel.load(p.model_file)
        self.queries: Mapping[str, str] = {}
        """The questions' text by id (the harness sets it: ``needs_queries``)."""
        self.scored_by: dict[str, int] = {}
        """Questions of the last :meth:`fuse` per model kind (``held_out_fold``, ``full_model``)."""

    @classmethod
    def check_inputs(
        cls, params: Mapping[str, Any], searched: Collection[str], known: Collection[str]
    ) -> None:
        """Read the model file once, before any work (docs/stages.md#learning-to-rank):
        a missing, binary, non-JSON or malformed file, a fold or booster that cannot be
        read, or a model fitted on stages that are not among the stage's ``inputs``
        (resolved by the harness) is a :class:`ConfigError` naming the file; each would
        otherwise fail every question of a run that still says ``done``, and a
        malformed LightGBM tree would abort the process."""
        path = params.get("model_file")
        if not isinstance(path, str | Path):
            raise ConfigError("ltr: model_file is required (a file written by rbench fit-ltr)")
        model = LTRModel.load(path)
        check_sources("ltr", path, model.sources, params.get("inputs"))

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        names = {run.name for run in runs}
        missing = [s for s in self.model.sources if s not in names]
        if missing:
            raise ConfigError(
                f"ltr: the model was fitted on stages {self.model.sources}; this run lacks "
                f"{missing} (add them with the same parameters, or re-fit)"
            )
        used = [run for run in runs if run.name in self.model.sources]
        run, self.scored_by = fuse_with(self.model, used, self.name, k, self.queries)
        return run

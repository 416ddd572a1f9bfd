"""The ``function-ranker`` model file: LambdaMART over the candidate functions'
features, with a fold model per held-out dataset (docs/stages.md#function-ranker).

Written by ``rbench fit-functions``
(:mod:`retrieval_bench.rank_fusion.function_fit`); read here, once per process
while the file is unchanged, the way the ``ltr`` fusion reads its own
(:class:`~retrieval_bench.rank_fusion.ltr.LTRModel`): a JSON object with
``"kind": "function-ranker"`` and ``format`` :data:`FORMAT`, the ``sources``
(the input stage labels the per-source features are named after), the
``feature_names`` (:func:`~retrieval_bench.rank_fusion.function_features.feature_names`
of the sources: a file of another feature set is refused), the ``full`` model
and the ``folds``, each ``{"model", "query_ids", "dataset"}``, plus the
training provenance. Each model is a LightGBM ``lambdarank`` booster
(:class:`~retrieval_bench.rank_fusion.lambdamart.LambdaMARTModel`, Burges 2010),
checked as text before LightGBM reads it
(:mod:`~retrieval_bench.rank_fusion.booster_text`).

Which model scores a question (cross-fitting, Chernozhukov et al. 2018, §3): the
fold model whose held-out questions hold it; else, for a fold that held out a
whole dataset (``--cross-fit dataset``), the fold of the question's dataset when
its id names one (``<dataset>:<id>``, :func:`~retrieval_bench.rank_fusion.ltr_data.dataset_of`);
else the full model. So a question of the training runs is never scored by a
model fitted on it, and a held-back table over the same repositories scores each
question with a model that never saw its repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.function_features import feature_names
from retrieval_bench.rank_fusion.lambdamart import KIND as LAMBDARANK
from retrieval_bench.rank_fusion.lambdamart import LambdaMARTModel
from retrieval_bench.rank_fusion.ltr_data import dataset_of
from retrieval_bench.rank_fusion.model_files import file_key, read_model_json

KIND = "function-ranker"
FORMAT = "retrieval_bench.fusion.function-ranker/1"  # a file-format id: stays as first written
_KEYS = ("kind", "format", "sources", "feature_names", "full", "folds")


@dataclass(frozen=True)
class Fold:
    """A model fitted without ``query_ids`` (all of ``dataset``'s, when it is set)."""

    model: LambdaMARTModel
    query_ids: frozenset[str]
    dataset: str | None = None


@dataclass(frozen=True)
class FunctionModel:
    """The contents of a model file (module doc)."""

    sources: list[str]
    full: LambdaMARTModel
    folds: list[Fold]
    meta: dict[str, Any]

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.sources)

    def model_for(self, query_id: str) -> tuple[LambdaMARTModel, bool]:
        """(the model to score ``query_id`` with, whether it is a held-out fold model):
        module doc."""
        for fold in self.folds:
            if query_id in fold.query_ids:
                return fold.model, True
        dataset = dataset_of(query_id)
        for fold in self.folds:
            if dataset and fold.dataset == dataset:
                return fold.model, True
        return self.full, False

    def to_dict(self) -> dict[str, Any]:
        folds = [
            {"model": f.model.to_dict(), "query_ids": sorted(f.query_ids), "dataset": f.dataset}
            for f in self.folds
        ]
        return {
            "kind": KIND,
            "format": FORMAT,
            "sources": list(self.sources),
            "feature_names": self.feature_names,
            "full": self.full.to_dict(),
            "folds": folds,
            **self.meta,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str | Path | None = None) -> FunctionModel:
        """The model of a file's JSON (read from ``source``, named in the messages); a
        :class:`ConfigError` says what is wrong and where (``folds.2: ...``): every
        fold's booster is checked and loaded here, not on the questions it scores."""
        name = f"model file {source}" if source is not None else "model"
        if not isinstance(data, Mapping):
            raise ConfigError(f"{KIND}: {name} is not a {KIND} model file (a JSON "
                              f"{type(data).__name__}, not an object)")  # fmt: skip
        if data.get("kind") != KIND or data.get("format") != FORMAT:
            raise ConfigError(
                f"{KIND}: {name} is not a {KIND} model file (kind {data.get('kind')!r}, "
                f"format {data.get('format')!r}; expected {KIND!r}, {FORMAT!r}: write one "
                "with rbench fit-functions)"
            )
        where = "sources"
        try:
            sources = data["sources"]
            if not isinstance(sources, list) or not sources:
                raise ValueError("not a list of stage labels")
            if not all(isinstance(s, str) and s for s in sources):
                raise ValueError("not a list of stage labels")
            names = feature_names(sources)
            where = "feature_names"
            if data.get("feature_names") != names:
                raise ValueError("feature names do not match this version's features")
            where = "full"
            full = _booster(data["full"], len(names))
            folds = []
            where = "folds"
            if not isinstance(data.get("folds", []), list):
                raise ValueError("not a list")
            for i, fold in enumerate(data.get("folds", [])):
                where = f"folds.{i}"
                ids = fold["query_ids"]
                if not isinstance(ids, list) or not all(isinstance(q, str) for q in ids):
                    raise ValueError("query_ids is not a list of question ids")
                dataset = fold.get("dataset")
                if dataset is not None and not isinstance(dataset, str):
                    raise ValueError("dataset is not a name")
                folds.append(Fold(_booster(fold["model"], len(names)), frozenset(ids), dataset))
        except KeyError as exc:
            raise ConfigError(f"{KIND}: {name} is malformed: {where}: no {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{KIND}: {name} is malformed: {where}: {exc}") from None
        meta = {k: v for k, v in data.items() if k not in _KEYS}
        return cls(list(sources), full, folds, meta)

    @classmethod
    def load(cls, path: str | Path) -> FunctionModel:
        """Read a model file written by ``rbench fit-functions``, once per process while
        it is unchanged (same size and modification time); every problem is a one-line
        :class:`ConfigError` naming the file."""
        return _load_model(*file_key(path, KIND, "fit-functions"))


def _booster(entry: Any, n_features: int) -> LambdaMARTModel:
    """A LightGBM ranker entry of the file, its booster checked and loaded."""
    if not isinstance(entry, Mapping):
        raise ValueError("not a model object")
    if entry.get("kind") != LAMBDARANK:
        raise ValueError(f"kind {entry.get('kind')!r} is not {LAMBDARANK!r}")
    return LambdaMARTModel.from_dict(entry, n_features)


@lru_cache(maxsize=8)
def _load_model(path: str, mtime_ns: int, size: int) -> FunctionModel:
    """:meth:`FunctionModel.load` of ``path`` as it is at ``mtime_ns``/``size`` (the key)."""
    data = read_model_json(path, KIND, "fit-functions")
    return FunctionModel.from_dict(data, path)

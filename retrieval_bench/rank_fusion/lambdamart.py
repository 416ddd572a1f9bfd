"""LambdaMART for the ``ltr`` fusion: LightGBM's ``lambdarank`` objective over the
same file features as the logistic model (docs/stages.md#learning-to-rank).

Burges, "From RankNet to LambdaRank to LambdaMART: An Overview" (MSR-TR-2010-82):
gradient-boosted trees whose gradients are the pairwise lambdas scaled by the
nDCG change of swapping two candidates, so the model optimises the ranking of
each question's candidates rather than each candidate's label alone. Fitted
with one group per question, ``num_threads`` and ``seed`` fixed so a model file
is reproducible (LightGBM's deterministic mode); stored in the model file as
LightGBM's own text format, read back with ``lightgbm.Booster(model_str=…)``
once :func:`~retrieval_bench.rank_fusion.booster_text.check_booster` has found it
safe to hand to LightGBM (a malformed tree block would otherwise abort the
process). LightGBM is imported only when such a model is fitted or loaded.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_bench.rank_fusion.booster_text import BoosterTextError, check_booster

FloatArray = npt.NDArray[np.float64]
KIND = "lambdarank"
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.9,
    "lambdarank_truncation_level": 20,
    "num_threads": 1,
    "seed": 0,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
}
"""Defaults: small trees for a few thousand questions; one thread, fixed seed."""
ROUNDS = 200


class _NoScikitLearn(importlib.abc.MetaPathFinder):
    """Refuses ``sklearn`` while LightGBM imports (:func:`import_lightgbm`)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == "sklearn" or fullname.startswith("sklearn."):
            raise ImportError(f"{fullname} is not loaded for LightGBM's native API")


def import_lightgbm() -> ModuleType:
    """``lightgbm``, imported without scikit-learn when nothing loaded it yet.

    LightGBM's package imports scikit-learn, when installed, for its estimator
    classes (``LGBMRanker``…): about two seconds at every process start, for an API
    this project never calls (it trains and predicts with ``lightgbm.train`` and
    ``Booster``). So while LightGBM imports, ``sklearn`` reads as not installed;
    afterwards it imports as usual (the logistic ``ltr`` models use it)."""
    if "lightgbm" in sys.modules or "sklearn" in sys.modules:
        import lightgbm

        return lightgbm
    finder = _NoScikitLearn()
    sys.meta_path.insert(0, finder)
    try:
        import lightgbm
    finally:
        sys.meta_path.remove(finder)
    return lightgbm


@dataclass
class LambdaMARTModel:
    """A fitted LightGBM ranker; :meth:`predict` gives each row's ranking score."""

    text: str
    """The booster in LightGBM's text format (what the model file stores)."""
    params: dict[str, Any] = field(default_factory=dict)
    checked: str | None = field(default=None, repr=False, compare=False)
    """What of :attr:`text` LightGBM reads, when it came from a file: its header and
    trees, as :func:`~retrieval_bench.rank_fusion.booster_text.check_booster` passed
    them (None: :attr:`text` itself, a booster this process fitted)."""
    _booster: Any = field(default=None, init=False, repr=False, compare=False)

    def predict(self, x: FloatArray) -> FloatArray:
        if self._booster is None:
            self.load()
        return np.asarray(self._booster.predict(x, num_threads=1), dtype=np.float64)

    def load(self) -> None:
        """Build the LightGBM booster from :attr:`checked` (a file's booster, as
        :meth:`from_dict` checked it), else from :attr:`text` (one fitted here);
        LightGBM's refusal is a :class:`ValueError`."""
        lightgbm = import_lightgbm()
        try:
            self._booster = lightgbm.Booster(model_str=self.checked or self.text)
        except Exception as exc:  # noqa: BLE001 - LightGBMError, or what the wrapper raises
            why = " ".join(str(exc).split())[:200]
            raise ValueError(f"booster: LightGBM cannot load it ({why})") from None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "params": self.params, "booster": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], n_features: int) -> LambdaMARTModel:
        """The model of a file's entry, its booster checked and loaded, so a model
        file LightGBM cannot read fails when it is read (a :class:`ValueError`)."""
        text = data["booster"]
        if not isinstance(text, str):
            raise ValueError("booster is not a string")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise ValueError("params is not an object")
        try:
            checked = check_booster(text, n_features)
        except BoosterTextError as exc:
            raise ValueError(f"booster: {exc}") from None
        model = cls(text, dict(params), checked)
        model.load()
        return model


def fit_lambdamart(
    x: FloatArray, y: FloatArray, groups: Sequence[int], seed: int = 0, rounds: int = ROUNDS
) -> LambdaMARTModel:
    """Fit on rows ``x`` with labels ``y``, one group (question) per entry of ``groups``."""
    lightgbm = import_lightgbm()

    params = {**PARAMS, "seed": seed}
    data = lightgbm.Dataset(x, label=y, group=list(groups), free_raw_data=False)
    booster = lightgbm.train(params, data, num_boost_round=rounds)
    return LambdaMARTModel(booster.model_to_string(), {**params, "num_boost_round": rounds})


def fit_readable(
    x: FloatArray,
    y: FloatArray,
    groups: Sequence[int],
    command: str,
    seed: int = 0,
    rounds: int = ROUNDS,
) -> LambdaMARTModel:
    """:func:`fit_lambdamart`, then the check a stage makes when it reads the model
    file (:func:`~retrieval_bench.rank_fusion.booster_text.check_booster`), so a
    booster it would refuse — with too few rows no tree splits, and LightGBM writes an
    empty leaf — fails the fitting ``command`` here, not a later run."""
    from retrieval_bench.errors import ConfigError

    model = fit_lambdamart(x, y, groups, seed=seed, rounds=rounds)
    try:
        check_booster(model.text, x.shape[1])
    except BoosterTextError as exc:
        raise ConfigError(
            f"{command}: the model fitted on {len(y)} candidates of {len(groups)} questions "
            f"could not be read back ({exc}); with so few rows no tree splits "
            f"(min_data_in_leaf {PARAMS['min_data_in_leaf']}): learn from more questions"
        ) from None
    return model

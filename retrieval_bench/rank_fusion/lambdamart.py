"""LambdaMART for the ``ltr`` fusion: LightGBM's ``lambdarank`` objective over the
same file features as the logistic model (docs/stages.md#learning-to-rank).

Burges, "From RankNet to LambdaRank to LambdaMART: An Overview" (MSR-TR-2010-82):
gradient-boosted trees whose gradients are the pairwise lambdas scaled by the
nDCG change of swapping two candidates, so the model optimises the ranking of
each question's candidates rather than each candidate's label alone. Fitted
with one group per question, ``num_threads`` and ``seed`` fixed so a model file
is reproducible (LightGBM's deterministic mode); stored in the model file as
LightGBM's own text format, read back with ``lightgbm.Booster(model_str=…)``.
LightGBM is imported only when such a model is fitted or loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

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


@dataclass
class LambdaMARTModel:
    """A fitted LightGBM ranker; :meth:`predict` gives each row's ranking score."""

    text: str
    """The booster in LightGBM's text format (what the model file stores)."""
    params: dict[str, Any] = field(default_factory=dict)
    _booster: Any = field(default=None, init=False, repr=False, compare=False)

    def predict(self, x: FloatArray) -> FloatArray:
        if self._booster is None:
            import lightgbm

            self._booster = lightgbm.Booster(model_str=self.text)
        return np.asarray(self._booster.predict(x, num_threads=1), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "params": self.params, "booster": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], n_features: int) -> LambdaMARTModel:
        model = cls(str(data["booster"]), dict(data.get("params", {})))
        if f"max_feature_idx={n_features - 1}\n" not in model.text:
            raise ValueError(f"the booster does not take {n_features} features")
        return model


def fit_lambdamart(
    x: FloatArray, y: FloatArray, groups: Sequence[int], seed: int = 0, rounds: int = ROUNDS
) -> LambdaMARTModel:
    """Fit on rows ``x`` with labels ``y``, one group (question) per entry of ``groups``."""
    import lightgbm

    params = {**PARAMS, "seed": seed}
    data = lightgbm.Dataset(x, label=y, group=list(groups), free_raw_data=False)
    booster = lightgbm.train(params, data, num_boost_round=rounds)
    return LambdaMARTModel(booster.model_to_string(), {**params, "num_boost_round": rounds})

"""``learned``: a regression over per-source scores and ranks.

The "future" ensemble rung (docs/stages.md#learned): a learned regression
model combines the scores. This is pointwise learning to rank with logistic regression
(as in Cooper, Gey & Dabney, "Probabilistic retrieval based on staged
logistic regression", SIGIR 1992; the linear fusion model of Vogt & Cottrell,
"Fusion via a linear combination of scores", Information Retrieval 1999).

Candidates of a query are the union of the chunks the sources returned. For
each source ``s`` (keyed by run name, so source order does not matter) a
candidate ``d`` gets three features, 0 where ``s`` did not return ``d``:

* ``s:score``   — ``s``'s score, min-max normalised within the query (all
  equal → 1.0, as :func:`~retrieval_bench.rank_fusion.normsum.minmax`);
* ``s:rr``      — reciprocal rank ``1 / rank_s(d)`` (ranks as :meth:`Run.ranked`);
* ``s:present`` — 1.0;

plus ``n_sources``, the number of sources that returned ``d``. Features are
standardised (``z = (x - mean) / scale``, training mean and std; a constant
feature gets scale 1), and the fused score is

    score(d) = σ(b + Σ_j c_j · z_j(d)),        σ(t) = 1 / (1 + e^-t)

the predicted probability that ``d`` is relevant. The model is fitted by
:meth:`LearnedFusion.fit` on the retrievers' runs over a labelled training
split: a candidate is relevant when its chunk's file is a gold file of the
example, or — for an example with ``gold_spans`` — when the chunk overlaps a
gold span. scikit-learn's ``LogisticRegression`` (L2, lbfgs,
``class_weight="balanced"``, fixed ``random_state``) does the fitting; scoring
is plain numpy over the stored parameters, so a model saved with
:meth:`LearnedFusion.to_dict` and loaded with :meth:`LearnedFusion.from_dict`
scores exactly as the fitted one. Ties break by chunk id.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.retrieval.spans import overlaps
from retrieval_bench.rank_fusion.normsum import minmax
from retrieval_bench.runs.file_ids import file_path
from retrieval_bench.types import Example, Run

FloatArray = npt.NDArray[np.float64]

FORMAT = "retrieval_bench.fusion.learned/1"  # a file-format id: stays as first written
PER_SOURCE = ("score", "rr", "present")
NOT_FITTED = "learned fusion needs a training split: set train_split in the dataset config"


def feature_names(sources: Sequence[str]) -> list[str]:
    """``<source>:score``, ``<source>:rr``, ``<source>:present`` per source, then ``n_sources``."""
    return [f"{s}:{f}" for s in sources for f in PER_SOURCE] + ["n_sources"]


def candidate_features(
    runs_by_name: Mapping[str, Run], sources: Sequence[str], query_id: str
) -> tuple[list[str], FloatArray]:
    """Candidates of one query (sorted ids) and their raw feature matrix.

    ``sources`` fixes the layout; a source absent from ``runs_by_name`` gives
    zeros. Candidates come from every run in ``runs_by_name``.
    """
    per_source: list[tuple[dict[str, float], dict[str, int]]] = []
    for s in sources:
        run = runs_by_name.get(s)
        if run is None:
            per_source.append(({}, {}))
            continue
        ranked = run.ranked(query_id)
        norm = minmax(dict(ranked))
        ranks = {cid: r for r, (cid, _) in enumerate(ranked, start=1)}
        per_source.append((norm, ranks))
    cands = sorted({cid for run in runs_by_name.values() for cid in run.scores.get(query_id, {})})
    x = np.zeros((len(cands), len(PER_SOURCE) * len(sources) + 1), dtype=np.float64)
    for i, cid in enumerate(cands):
        for j, (norm, ranks) in enumerate(per_source):
            rank = ranks.get(cid)
            if rank is not None:
                x[i, 3 * j : 3 * j + 3] = (norm[cid], 1.0 / rank, 1.0)
        x[i, -1] = x[i, 2 : -1 : len(PER_SOURCE)].sum()
    return cands, x


def _by_name(runs: Sequence[Run]) -> dict[str, Run]:
    names = [run.name for run in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"learned: runs must have distinct names; repeated: {dup}")
    return {run.name: run for run in runs}


def relevance_label(example: Example, cid: str, corpus: Corpus) -> float:
    """1.0 when chunk ``cid`` overlaps a gold span (span examples) or is in a gold file
    (a ``file:<path>`` id: when the file is gold)."""
    chunk = corpus.by_id.get(cid)
    if chunk is None:  # a file:<path> id (file-level runs) is labelled by its file
        return float(file_path(cid) in example.gold_files)
    if example.gold_spans:
        return float(any(overlaps(chunk, span) for span in example.gold_spans))
    return float(chunk.path in example.gold_files)


class LearnedFusion(Fusion):
    """Logistic regression over per-source features (see module doc).

    Parameters:
        C: inverse L2 regularisation strength of the regression.
        max_iter: iteration cap of the lbfgs solver.
        random_state: seed handed to scikit-learn (fitting is deterministic).
        name: the name of the fused run.
    """

    trainable = True

    class Params(StageParams):
        C: int | float = 1.0  # scikit-learn's name; an int stays one (to_dict writes it)
        max_iter: int = 1000
        random_state: int = 0

        @field_validator("C")
        @classmethod
        def _positive(cls, C: float) -> float:
            if C <= 0:
                raise ValueError(f"learned: C must be > 0, not {C}")
            return C

    params: LearnedFusion.Params

    def __init__(
        self, params: LearnedFusion.Params | None = None, /, *, name: str = "learned", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.C = p.C
        self.max_iter = p.max_iter
        self.random_state = p.random_state
        self.sources: list[str] = []
        self._mean: FloatArray | None = None
        self._scale: FloatArray | None = None
        self._coef: FloatArray | None = None
        self._intercept = 0.0
        self.n_train = 0
        """Training candidates (rows) of the last fit."""

    @property
    def fitted(self) -> bool:
        return self._coef is not None

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.sources)

    @property
    def intercept(self) -> float:
        self._check_fitted()
        return self._intercept

    def fit(self, runs: Sequence[Run], examples: Sequence[Example], corpus: Corpus) -> None:
        """Fit on the retrievers' ``runs`` over the training queries of ``examples``.

        Queries of the runs without an example are ignored. Raises
        :class:`ConfigError` when the split yields no candidates of one class.
        """
        try:
            from sklearn.linear_model import LogisticRegression
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(
                "learned fusion needs scikit-learn: pip install scikit-learn"
            ) from exc
        by_name = _by_name(runs)
        sources = sorted(by_name)
        if not sources:
            raise ConfigError("learned: fit needs at least one retriever run")
        by_id = {ex.id: ex for ex in examples}
        rows: list[FloatArray] = []
        labels: list[float] = []
        for q in query_ids(runs):
            ex = by_id.get(q)
            if ex is None:
                continue
            cands, x = candidate_features(by_name, sources, q)
            rows.append(x)
            labels.extend(relevance_label(ex, cid, corpus) for cid in cands)
        y = np.asarray(labels, dtype=np.float64)
        n_pos = int(y.sum())
        if n_pos == 0 or n_pos == len(y):
            raise ConfigError(
                f"learned: the training split gives {len(y)} candidates of which {n_pos} are "
                "relevant; it needs both relevant and irrelevant ones (check train_split and gold)"
            )
        x_all = np.vstack(rows)
        mean = x_all.mean(axis=0)
        std = x_all.std(axis=0)
        scale = np.where(std > 0, std, 1.0)
        model = LogisticRegression(
            C=self.C,
            class_weight="balanced",
            max_iter=self.max_iter,
            random_state=self.random_state,
            solver="lbfgs",
        )
        model.fit((x_all - mean) / scale, y.astype(np.int64))
        self.sources = sources
        self._mean, self._scale = mean, scale
        self._coef = np.asarray(model.coef_[0], dtype=np.float64)
        self._intercept = float(model.intercept_[0])
        self.n_train = len(y)

    def coefficients(self) -> dict[str, float]:
        """Feature name → coefficient (on standardised features; see :attr:`intercept`)."""
        self._check_fitted()
        assert self._coef is not None
        return dict(zip(self.feature_names, self._coef.tolist(), strict=True))

    def source_weights(self) -> dict[str, float]:
        """Source → sum of ``|coefficient|`` of its three features: how much the model uses it.

        The presence flags and ``n_sources`` are collinear (``n_sources`` is their
        sum), so single presence coefficients are not identifiable on their own;
        read the ``:score`` coefficients or this total instead.
        """
        coefs = self.coefficients()
        return {s: sum(abs(coefs[f"{s}:{f}"]) for f in PER_SOURCE) for s in self.sources}

    def predict(self, x: FloatArray) -> FloatArray:
        """Probability of relevance for rows of raw features (layout :attr:`feature_names`)."""
        self._check_fitted()
        assert self._coef is not None and self._mean is not None and self._scale is not None
        z = ((x - self._mean) / self._scale) @ self._coef + self._intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Score every candidate of ``runs`` by the fitted model; keep the top ``k``."""
        self._check_fitted()
        by_name = _by_name(runs)
        missing = [s for s in self.sources if s not in by_name]
        extra = sorted(set(by_name) - set(self.sources))
        if missing:
            warnings.warn(
                f"learned: sources {missing} were in training but are missing now; "
                "their features are 0 (re-fit on the current retrievers)",
                stacklevel=2,
            )
        if extra:
            warnings.warn(
                f"learned: sources {extra} were not in training; "
                "they only add candidates (re-fit to use their scores)",
                stacklevel=2,
            )
        fused: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            cands, x = candidate_features(by_name, self.sources, q)
            probs = self.predict(x).tolist() if cands else []
            fused[q] = dict(zip(cands, probs, strict=True))
        return Run(self.name, fused).truncated(k)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters: sources, feature names, scaler and weights."""
        self._check_fitted()
        assert self._coef is not None and self._mean is not None and self._scale is not None
        return {
            "format": FORMAT,
            "name": self.name,
            "params": {"C": self.C, "max_iter": self.max_iter, "random_state": self.random_state},
            "sources": list(self.sources),
            "feature_names": self.feature_names,
            "mean": self._mean.tolist(),
            "scale": self._scale.tolist(),
            "coef": self._coef.tolist(),
            "intercept": self._intercept,
            "n_train": self.n_train,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LearnedFusion:
        """Rebuild a fitted model from :meth:`to_dict` output."""
        if data.get("format") != FORMAT:
            raise ConfigError(
                f"learned: not a saved learned-fusion model (format {data.get('format')!r}, "
                f"expected {FORMAT!r})"
            )
        try:
            params = dict(data.get("params", {}))
            model = cls(name=str(data.get("name", "learned")), **params)
            sources = [str(s) for s in data["sources"]]
            arrays = [np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "coef")]
            intercept = float(data["intercept"])
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ConfigError(f"learned: malformed saved model: {exc}") from exc
        names = feature_names(sources)
        if list(data.get("feature_names", names)) != names or any(
            a.shape != (len(names),) for a in arrays
        ):
            raise ConfigError(
                "learned: malformed saved model: feature names or sizes do not match the sources"
            )
        model.sources = sources
        model._mean, model._scale, model._coef = arrays
        model._intercept = intercept
        model.n_train = int(data.get("n_train", 0))
        return model

    def _check_fitted(self) -> None:
        if self._coef is None:
            raise ConfigError(NOT_FITTED)

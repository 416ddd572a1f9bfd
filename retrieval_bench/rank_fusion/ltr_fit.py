"""Fit an ``ltr`` model file from stored runs, cross-fitted (docs/stages.md#learning-to-rank).

Training data are the per-stage TREC runs of stored benchmark runs
(``results/<run>/runs/<dataset>/<stage>.trec``) and their questions' gold files
(``queries.jsonl``, after any gold remapping), optionally restricted to one split
(the row's ``split``, or the dataset's ``hash_split`` when the run set one):
:func:`~retrieval_bench.rank_fusion.ltr_data.load_training` reads them through the
store's run-folder reader. Every candidate file of every question is one row
(features: :mod:`retrieval_bench.rank_fusion.ltr_features`), labelled 1 when it is
a gold file.

Fitting: scikit-learn's ``LogisticRegression`` (L2, lbfgs,
``class_weight="balanced"``, ``random_state`` fixed) on standardised features.
Questions are split into ``folds`` folds by sha256 of their id; fold ``i``'s model
is fitted on the other folds, and the full model on all. The out-of-fold scores
give the *selection* check written into the model file: per question, the
objective of the model's ranking and of each input's own file ranking, the
best input by mean, and a paired randomisation test of the model against it.
A model significantly worse than its best input is flagged
(``selection.significantly_worse``) and ``rbench fit-ltr`` says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.ltr import FORMAT, LinearModel, LTRModel, RankModel
from retrieval_bench.rank_fusion.ltr_data import TrainingSet, load_training
from retrieval_bench.rank_fusion.ltr_selection import objective_measure, selection_check
from retrieval_bench.runs.file_ids import doc_path
from retrieval_bench.store.io import write_text_atomically

FloatArray = npt.NDArray[np.float64]


def fold_of(query_id: str, folds: int) -> int:
    """The fold of a question: sha256 of its id, modulo ``folds`` (stable across runs)."""
    digest = hashlib.sha256(query_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % folds


Rows = tuple[FloatArray, FloatArray, list[int]]
"""Feature rows, labels, candidates per question."""


def _rows(data: TrainingSet, qids: Sequence[str]) -> Rows:
    """Feature rows and labels of ``qids``' candidates, and the candidates per question."""
    xs: list[FloatArray] = []
    ys: list[float] = []
    sizes: list[int] = []
    for q in qids:
        cands, x = data.features(q)
        xs.append(x)
        ys.extend(float(doc_path(c) in data.gold[q]) for c in cands)
        sizes.append(len(cands))
    return np.vstack(xs), np.asarray(ys, dtype=np.float64), sizes


MODELS = ("logistic", "lambdarank")
CROSS_FITS = ("hash", "dataset")


def _fit(
    kind: str, rows: tuple[FloatArray, FloatArray, list[int]], C: float, seed: int
) -> RankModel:
    x, y, sizes = rows
    if kind == "lambdarank":
        from retrieval_bench.rank_fusion.lambdamart import fit_readable

        if not 0 < int(y.sum()) < len(y):
            raise ConfigError(f"fit-ltr: {len(y)} candidate files of which {int(y.sum())} gold")
        return fit_readable(x, y, sizes, "fit-ltr", seed)
    return fit_linear(x, y, C, seed)


def fit_linear(x: FloatArray, y: FloatArray, C: float = 1.0, seed: int = 0) -> LinearModel:
    """Standardise, then fit a balanced L2 logistic regression (module doc)."""
    from sklearn.linear_model import LogisticRegression

    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == len(y):
        raise ConfigError(
            f"fit-ltr: {len(y)} candidate files of which {n_pos} are gold; need both kinds "
            "(are the gold files among the sources' candidates?)"
        )
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    model = LogisticRegression(
        C=C, class_weight="balanced", max_iter=2000, random_state=seed, solver="lbfgs"
    )
    model.fit((x - mean) / scale, y.astype(np.int64))
    return LinearModel(mean, scale, np.asarray(model.coef_[0], dtype=np.float64),
                       float(model.intercept_[0]))  # fmt: skip


def fit_ltr(
    data: TrainingSet,
    *,
    folds: int = 5,
    C: float = 1.0,
    seed: int = 0,
    objective: str = "Acc@5",
    alpha: float = 0.05,
    model: str = "logistic",
    cross_fit: str = "hash",
) -> LTRModel:
    """The full model, the fold models and the out-of-fold selection check (module doc).

    ``model``: ``logistic`` or ``lambdarank`` (LambdaMART). ``cross_fit``: ``hash``
    (``folds`` folds by the hash of the id) or ``dataset`` (one fold per dataset of
    the training runs: each question is scored by a model that never saw its
    repository; ``folds`` is then the number of datasets)."""
    if model not in MODELS or cross_fit not in CROSS_FITS:
        raise ConfigError(f"fit-ltr: model must be one of {MODELS} and cross_fit one of "
                          f"{CROSS_FITS}, not {model!r} / {cross_fit!r}")  # fmt: skip
    if folds < 2 and cross_fit == "hash":
        raise ConfigError(f"fit-ltr: folds must be at least 2, not {folds}")
    objective_measure(objective)  # validates the objective early
    qids = data.query_ids
    if cross_fit == "dataset":
        names = sorted({data.dataset_of(q) for q in qids})
        fold = {q: names.index(data.dataset_of(q)) for q in qids}
        folds = len(names)
    else:
        fold = {q: fold_of(q, folds) for q in qids}
    if len(set(fold.values())) < 2:
        # every fold model needs the questions of another fold to learn from
        raise ConfigError(
            f"fit-ltr: cross-fitting needs questions in at least 2 of the {folds} folds, but "
            f"all {len(qids)} question(s) hash to the same fold, so none can be scored out of "
            "fold: learn from more questions (more runs, a larger --limit, no --split)"
        )
    rows = _rows(data, qids)
    y = rows[1]
    full = _fit(model, rows, C, seed)
    fold_models: list[tuple[RankModel, frozenset[str]]] = []
    oof_scores: dict[str, dict[str, float]] = {}
    for i in range(folds):
        held = [q for q in qids if fold[q] == i]
        rest = [q for q in qids if fold[q] != i]
        if not held or not rest:
            continue
        fitted = _fit(model, _rows(data, rest), C, seed)
        fold_models.append((fitted, frozenset(held)))
        for q in held:
            cands, xq = data.features(q)
            predicted = fitted.predict(xq).tolist() if cands else []
            oof_scores[q] = dict(zip(cands, predicted, strict=True))
    selection = selection_check(data, qids, oof_scores, objective, seed=seed, alpha=alpha)
    import sklearn

    meta = {
        "training": {
            "runs": data.origins,
            "questions": len(qids),
            "rows": int(len(y)),
            "gold_rows": int(y.sum()),
            "folds": folds,
            "cross_fit": cross_fit,
            "C": C,
            "random_state": seed,
            "model": ("LightGBM lambdarank (LambdaMART)" if model == "lambdarank" else
                      "sklearn LogisticRegression(class_weight=balanced, lbfgs, L2)"),
            "versions": {"scikit-learn": sklearn.__version__, "numpy": np.__version__,
                         "python": platform.python_version()},
        },
        "selection": selection,
        "query_features": data.query_features,
    }  # fmt: skip
    return LTRModel(list(data.sources), full, fold_models, meta)


def describe(model: LTRModel) -> str:
    """A few lines for the terminal: training size, the selection check, coefficients."""
    t, s = model.meta["training"], model.meta["selection"]
    lines = [
        f"ltr: {t['questions']} questions, {t['rows']} candidate files ({t['gold_rows']} gold), "
        f"{t['folds']} folds ({t.get('cross_fit', 'hash')}), {t['model']}",
        f"selection ({s['objective']}, out of fold): ltr {s['ltr_out_of_fold']:.3f} vs best "
        f"input {s['best_input']} {s['inputs'][s['best_input']]:.3f} "
        f"(Δ {s['delta_vs_best_input']:+.3f}, p={s['p_value']:.3g})",
    ]
    if s["significantly_worse"]:
        lines.append(
            f"! the model is significantly worse than its best input {s['best_input']}: "
            "use that input instead"
        )
    if s.get("delta_ci95"):
        lines[-1] += f", 95% CI [{s['delta_ci95'][0]:+.3f}, {s['delta_ci95'][1]:+.3f}]"
    lines.append("inputs: " + ", ".join(f"{k} {v:.3f}" for k, v in s["inputs"].items()))
    for name, d in s.get("per_dataset", {}).items():
        ci = d["delta_ci95"] or [float("nan")] * 2
        lines.append(
            f"  {name}: ltr {d['ltr_out_of_fold']:.3f} vs {d['best_input']} "
            f"{d['inputs'][d['best_input']]:.3f} (Δ {d['delta_vs_best_input']:+.3f} "
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}], p={d['p_value']:.3g}, n={d['questions']})"
        )
    coefs = model.coefficients()
    top = sorted(coefs.items(), key=lambda kv: -abs(kv[1]))
    lines.append("coefficients: " + ", ".join(f"{k} {v:+.2f}" for k, v in top if math.isfinite(v)))
    return "\n".join(lines)


def check_model_path(path: str | Path) -> None:
    """A :class:`ConfigError` when ``path`` cannot be the model file (a folder, or as
    given on the command line a name ending in ``/``, which ``Path`` would drop and
    then write a file of the folder's name): checked before the fitting, so that a
    typo costs no work."""
    if Path(path).is_dir() or str(path).endswith(("/", os.sep)):
        raise ConfigError(
            f"fit-ltr: --out {path} is a folder: name the model file to write "
            f"(e.g. {Path(path) / 'ltr.json'})"
        )


def model_text(model: LTRModel) -> str:
    """The model file's text (JSON), as :func:`write_model` and ``rbench fit-ltr`` write it."""
    return json.dumps(model.to_dict(), indent=1) + "\n"


def write_model(model: LTRModel, path: Path) -> None:
    """Write the model file (JSON) atomically, creating its folder; an unwritable path
    is a one-line :class:`ConfigError`. (``rbench fit-ltr`` writes through
    :class:`~retrieval_bench.out_file.OutFile` instead, which never creates a folder.)"""
    check_model_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, model_text(model))
    except OSError as exc:
        blocking = next((p for p in path.parents if p.is_file()), None)
        why = f"{blocking} is a file, not a folder" if blocking else exc.strerror or str(exc)
        raise ConfigError(f"fit-ltr: cannot write the model file {path}: {why}") from None


__all__ = [
    "FORMAT",
    "TrainingSet",
    "check_model_path",
    "describe",
    "fit_ltr",
    "load_training",
    "model_text",
    "write_model",
]

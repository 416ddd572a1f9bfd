"""Fit a ``function-ranker`` model file from stored runs (docs/stages.md#function-ranker).

Training data are the candidate feature rows a ``function-ranker`` stage recorded
in stored runs (``record_features: true``: ``artifacts/<dataset>/<stage>.jsonl``,
one line per question, ``{"query_id", "artifact": {"sources", "features",
"candidates": [[entity, [values]], ...]}}``), labelled by the questions' gold
functions: 1 when the candidate's ``path:Qualified.name`` is one. The gold
functions are read from the run's ``queries.jsonl`` rows when they carry a
``gold_functions`` field, else from each dataset's questions file as the run's
config names it, with its ``gold_functions`` file merged in, as a run does
(:func:`~retrieval_bench.datasets.jsonl.merge_gold_functions`). Questions without
gold functions, or whose candidates hold none, teach a ranker nothing and are
dropped (counted in the model file's ``training.dropped``).

Fitting: LambdaMART (LightGBM ``lambdarank``,
:mod:`~retrieval_bench.rank_fusion.lambdamart`: one group per question, one
thread, seed 0, deterministic). Cross-fitting (``cross_fit``): ``hash`` (the
default), ``folds`` folds by sha256 of the question id; ``dataset``, one fold
model per dataset fitted without it (a repository's questions are scored by a
model that never saw that repository); ``none``, the full model only. The out-of-fold rankings give
the check written into the file (``out_of_fold``): function Acc@5 (every gold
function in the top 5) and MRR of the model's ranking and of the untrained
score's, over the same candidates, so a model that does not beat the score it
replaces is visible.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_bench.datasets.jsonl import jsonl_rows
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.identifiers import inside
from retrieval_bench.metrics.retrieval.conventions import (
    Conventions,
    fold_init,
    gold_functions,
    ranked_functions,
)
from retrieval_bench.rank_fusion.function_features import default_scores, feature_names
from retrieval_bench.rank_fusion.function_model import KIND, Fold, FunctionModel
from retrieval_bench.rank_fusion.lambdamart import PARAMS, ROUNDS, fit_readable, import_lightgbm
from retrieval_bench.rank_fusion.ltr_fit import fold_of
from retrieval_bench.store.run_folder import ResultsFileError, read_queries, read_run_config
from retrieval_bench.store.stored_config import StoredConfig, stage_label

FloatArray = npt.NDArray[np.float64]
CROSS_FITS = ("hash", "dataset", "none")
CUTOFF = 5
"""The cutoff of the out-of-fold Acc@k."""
_CMD = "fit-functions"


def artifacts_path(run_dir: Path, dataset: str, stage: str) -> Path:
    """``run_dir/artifacts/<dataset>/<stage>.jsonl`` (ValueError for a name that would
    lead outside the folder)."""
    return inside(run_dir / "artifacts", dataset, stage, suffix=".jsonl")


@dataclass
class FunctionTraining:
    """Questions with their candidates, feature rows and gold functions."""

    stage: str
    sources: list[str] = field(default_factory=list)
    rows: dict[str, tuple[list[str], FloatArray]] = field(default_factory=dict)
    """Question id → (candidate entities, feature rows)."""
    gold: dict[str, frozenset[str]] = field(default_factory=dict)
    datasets: dict[str, str] = field(default_factory=dict)
    origins: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    stage_params: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, set[str]] = field(default_factory=dict)
    """Dataset → every question of it the runs hold, the ones dropped too: a dataset's
    fold model holds all of them out, so none is scored by a model that saw its
    repository."""
    conventions: Conventions = "locagent"
    """Whose gold functions label the candidates (docs/metrics.md#conventions): under
    LocAgent's, ``Class.__init__`` and ``Class`` are one item."""

    def key(self, entity: str) -> str:
        """The item a candidate counts as under :attr:`conventions`."""
        return fold_init(entity) if self.conventions == "locagent" else entity

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.sources)

    @property
    def query_ids(self) -> list[str]:
        return sorted(self.rows)

    def labels(self, query_id: str) -> FloatArray:
        cands, _ = self.rows[query_id]
        gold = self.gold[query_id]
        return np.asarray([float(self.key(c) in gold) for c in cands], dtype=np.float64)


def _gold_from_questions(
    spec: dict[str, Any], conventions: Conventions
) -> dict[str, tuple[str, ...]]:
    """Question id → gold functions under ``conventions``, from a dataset's questions
    (and gold functions) file."""
    from retrieval_bench.datasets.jsonl import load_examples, merge_gold_functions

    questions = spec.get("questions")
    if not isinstance(questions, str):
        return {}
    examples = load_examples(questions).examples
    merge = spec.get("gold_functions")
    if isinstance(merge, str):
        examples = merge_gold_functions(examples, Path(merge))
    return {e.id: gold_functions(e, conventions) for e in examples}


def _read_artifacts(path: Path, stage: str) -> dict[str, Any]:
    """Question id → its recorded artifact (questions the stage failed left out)."""
    out: dict[str, Any] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{_CMD}: cannot read {path}: {exc}") from None
    for number, rec in jsonl_rows(text):
        if isinstance(rec, json.JSONDecodeError):
            raise ConfigError(f"{_CMD}: {path}:{number}: not valid JSON ({rec.msg})")
        art = rec.get("artifact") if isinstance(rec, dict) else None
        if art is None:
            continue
        if not isinstance(art, dict) or "features" not in art or "candidates" not in art:
            raise ConfigError(f"{_CMD}: {path}:{number}: not the feature rows of a {KIND} "
                              f"stage (run {stage!r} with record_features: true)")  # fmt: skip
        out[str(rec.get("query_id"))] = art
    return out


def _rows(art: dict[str, Any], names: list[str], where: str) -> tuple[list[str], FloatArray]:
    try:
        cands = [str(e) for e, _ in art["candidates"]]
        x = np.asarray([row for _, row in art["candidates"]], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{_CMD}: {where}: malformed candidates ({exc})") from None
    if not cands:
        x = np.zeros((0, len(names)))
    if x.shape != (len(cands), len(names)):
        raise ConfigError(f"{_CMD}: {where}: rows of {x.shape[-1]} values, not {len(names)}")
    return cands, x


def load_function_training(
    run_dirs: Sequence[Path],
    stage: str,
    exclude_datasets: Sequence[str] = (),
    conventions: Conventions = "locagent",
) -> FunctionTraining:
    """Gather the recorded questions of ``stage`` in stored runs (module doc); a file
    that cannot be read, a run without the stage or without recorded features, and
    runs of different feature sets are :class:`ConfigError`\\ s naming them."""
    data = FunctionTraining(stage, conventions=conventions)
    dropped = {"no_features": 0, "no_gold_functions": 0, "no_gold_candidate": 0}
    for run_dir in run_dirs:
        try:
            cfg = read_run_config(run_dir)
            rows = read_queries(run_dir, ("query_id", "dataset"))
        except ResultsFileError as exc:
            raise ConfigError(f"{_CMD}: {exc}") from None
        stored = StoredConfig.from_saved(cfg)
        entry = next((s for s in stored.fusions if stage_label(s) == stage), None)
        if entry is None or entry.get("name") != KIND:
            raise ConfigError(f"{_CMD}: run {run_dir.name} has no {KIND} stage {stage!r} "
                              f"(its fusions: {stored.fusion_labels})")  # fmt: skip
        data.stage_params = data.stage_params or dict(entry)
        specs = {str(d["name"]): d for d in stored.datasets if d.get("name")}
        recorded: dict[str, dict[str, Any]] = {}
        for ds in specs:
            try:
                path = artifacts_path(run_dir, ds, stage)
            except ValueError as exc:
                raise ConfigError(f"{_CMD}: {exc}") from None
            if not path.exists():
                raise ConfigError(f"{_CMD}: run {run_dir.name} has no recorded features of "
                                  f"{stage!r} for dataset {ds} ({path} missing: run the "
                                  "stage with record_features: true)")  # fmt: skip
            recorded[ds] = _read_artifacts(path, stage)
        gold_of: dict[str, dict[str, tuple[str, ...]]] = {}
        kept = 0
        for row in rows:
            ds, qid = str(row["dataset"]), str(row["query_id"])
            if ds in exclude_datasets:
                continue
            data.asked.setdefault(ds, set()).add(qid)
            art = recorded.get(ds, {}).get(qid)
            if art is None:
                dropped["no_features"] += 1
                continue
            if "gold_functions" in row:
                gold = frozenset(map(data.key, row["gold_functions"] or ()))
            else:
                if ds not in gold_of:
                    try:
                        gold_of[ds] = _gold_from_questions(specs.get(ds, {}), conventions)
                    except RBenchError as exc:
                        raise ConfigError(f"{_CMD}: run {run_dir.name}: {exc}") from None
                bare = qid.split(":", 1)[1] if qid.startswith(f"{ds}:") else qid
                gold = frozenset(gold_of[ds].get(bare, ()))
            if not gold:
                dropped["no_gold_functions"] += 1
                continue
            sources = [str(s) for s in art.get("sources", [])]
            if not data.sources:
                data.sources = sources
            if sources != data.sources or art["features"] != data.feature_names:
                raise ConfigError(
                    f"{_CMD}: run {run_dir.name}, question {qid}: features of sources "
                    f"{sources}, not {data.sources} as before (re-run with the same inputs)"
                )
            cands, x = _rows(art, data.feature_names, f"run {run_dir.name}, question {qid}")
            if not any(data.key(c) in gold for c in cands):
                dropped["no_gold_candidate"] += 1
                continue
            if qid in data.rows:
                raise ConfigError(f"{_CMD}: question id {qid} repeats across runs")
            data.rows[qid], data.gold[qid], data.datasets[qid] = (cands, x), gold, ds
            kept += 1
        prov = cfg.get("provenance", {})
        data.origins.append({
            "run": run_dir.name,
            "datasets": sorted(d for d in specs if d not in exclude_datasets),
            "config": stored.name,
            "dataset_fingerprint": prov.get("dataset_fingerprint"),
            "config_fingerprint": prov.get("config_fingerprint"),
            "git_commit": prov.get("git_commit"),
            "questions": kept,
        })  # fmt: skip
    data.dropped = dropped
    if not data.rows:
        raise ConfigError(
            f"{_CMD}: no question of stage {stage!r} has a gold function among its "
            f"candidates (dropped: {dropped})"
        )
    return data


def _stack(data: FunctionTraining, qids: Sequence[str]) -> tuple[FloatArray, FloatArray, list[int]]:
    xs = [data.rows[q][1] for q in qids]
    ys = [data.labels(q) for q in qids]
    return np.vstack(xs), np.concatenate(ys), [len(y) for y in ys]


def _fit(data: FunctionTraining, qids: Sequence[str], rounds: int, seed: int) -> Any:
    x, y, sizes = _stack(data, qids)
    if not 0 < int(y.sum()) < len(y):
        raise ConfigError(f"{_CMD}: {len(y)} candidates of which {int(y.sum())} gold: "
                          "need both kinds to learn a ranking")  # fmt: skip
    return fit_readable(x, y, sizes, _CMD, seed=seed, rounds=rounds)


def ranking_scores(order: Sequence[str], gold: frozenset[str]) -> tuple[float, float]:
    """(Acc@:data:`CUTOFF`: every gold function in the top ones, reciprocal rank of the
    first gold function) of a ranking; gold functions outside it count as missed."""
    top = set(order[:CUTOFF])
    first = next((r for r, e in enumerate(order, start=1) if e in gold), None)
    return float(gold <= top), (1.0 / first if first else 0.0)


def _ranked(cands: Sequence[str], scores: FloatArray) -> list[str]:
    return [c for _, c in sorted(zip((-scores).tolist(), cands, strict=True))]


def _summary(per_q: dict[str, tuple[float, float, float, float]]) -> dict[str, Any]:
    n = len(per_q)
    if not n:
        return {"questions": 0}
    a = np.asarray(list(per_q.values()), dtype=np.float64).mean(axis=0).round(4).tolist()
    return {"questions": n, "model": {f"function_Acc@{CUTOFF}": a[0], "function_MRR": a[1]},
            "untrained": {f"function_Acc@{CUTOFF}": a[2], "function_MRR": a[3]}}  # fmt: skip


def fit_functions(
    data: FunctionTraining,
    *,
    cross_fit: str = "hash",
    folds: int = 5,
    rounds: int = ROUNDS,
    seed: int = 0,
) -> FunctionModel:
    """The full model, the fold models and the out-of-fold check (module doc)."""
    if cross_fit not in CROSS_FITS:
        raise ConfigError(f"{_CMD}: cross_fit must be one of {CROSS_FITS}, not {cross_fit!r}")
    qids = data.query_ids
    if cross_fit == "dataset":
        names = sorted({data.datasets[q] for q in qids})
        fold = {q: names.index(data.datasets[q]) for q in qids}
    elif cross_fit == "hash":
        fold = {q: fold_of(q, folds) for q in qids}
    else:
        fold = {}
    if fold and len(set(fold.values())) < 2:
        raise ConfigError(
            f"{_CMD}: cross-fitting by {cross_fit} needs questions in at least 2 folds, but "
            f"all {len(qids)} question(s) fall in one (learn from more runs or datasets, "
            "or --cross-fit none)"
        )
    full = _fit(data, qids, rounds, seed)
    names_ = data.feature_names
    fold_models: list[Fold] = []
    per_q: dict[str, tuple[float, float, float, float]] = {}
    by_dataset: dict[str, dict[str, tuple[float, float, float, float]]] = {}
    for i in sorted(set(fold.values())):
        held = [q for q in qids if fold[q] == i]
        model = _fit(data, [q for q in qids if fold[q] != i], rounds, seed)
        dataset = data.datasets[held[0]] if cross_fit == "dataset" else None
        held_out = data.asked.get(dataset, set()) | set(held) if dataset else set(held)
        fold_models.append(Fold(model, frozenset(held_out), dataset))
        for q in held:
            cands, x = data.rows[q]
            gold = data.gold[q]
            by_model = ranked_functions(_ranked(cands, model.predict(x)), data.conventions)
            untrained = ranked_functions(
                _ranked(cands, default_scores(x, names_)), data.conventions
            )
            scores = (*ranking_scores(by_model, gold), *ranking_scores(untrained, gold))
            per_q[q] = scores
            by_dataset.setdefault(data.datasets[q], {})[q] = scores
    lightgbm = import_lightgbm()

    from retrieval_bench.version import __version__

    y_all = np.concatenate([data.labels(q) for q in qids])
    meta = {
        "training": {
            "stage": data.stage,
            "stage_params": data.stage_params,
            "conventions": data.conventions,
            "runs": data.origins,
            "datasets": sorted(set(data.datasets.values())),
            "questions": len(qids),
            "rows": int(len(y_all)),
            "gold_rows": int(y_all.sum()),
            "dropped": data.dropped,
            "cross_fit": cross_fit,
            "folds": len(fold_models),
            "rounds": rounds,
            "seed": seed,
            "model": "LightGBM lambdarank (LambdaMART)",
            "lightgbm_params": {**PARAMS, "seed": seed, "num_boost_round": rounds},
            "versions": {"lightgbm": lightgbm.__version__, "numpy": np.__version__,
                         "python": platform.python_version(), "retrieval_bench": __version__},
        },
        "out_of_fold": {**_summary(per_q),
                        "per_dataset": {d: _summary(v) for d, v in sorted(by_dataset.items())}},
    }  # fmt: skip
    return FunctionModel(list(data.sources), full, fold_models, meta)


def describe(model: FunctionModel) -> str:
    """A few lines for the terminal: training size, what was dropped, the out-of-fold check."""
    t, o = model.meta["training"], model.meta["out_of_fold"]
    d = t["dropped"]
    lines = [
        f"{KIND}: {t['questions']} questions, {t['rows']} candidates ({t['gold_rows']} gold), "
        f"{t['folds']} folds ({t['cross_fit']}), {t['model']}, {t['rounds']} rounds",
        f"dropped: {d['no_gold_functions']} without gold functions, {d['no_gold_candidate']} "
        f"without a gold function among the candidates, {d['no_features']} without features",
    ]
    acc = f"function_Acc@{CUTOFF}"
    for name, s in [("all", o), *o.get("per_dataset", {}).items()]:
        if s.get("questions"):
            lines.append(
                f"{'out of fold' if name == 'all' else '  ' + name} ({s['questions']}): "
                f"{acc} {s['model'][acc]:.3f} vs untrained {s['untrained'][acc]:.3f}, "
                f"MRR {s['model']['function_MRR']:.3f} vs {s['untrained']['function_MRR']:.3f}"
            )
    return "\n".join(lines)

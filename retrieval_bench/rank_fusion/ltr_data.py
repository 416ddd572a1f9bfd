"""The training data of ``rbench fit-ltr`` (docs/stages.md#learning-to-rank): stored
runs' questions with their gold files and the sources' file-level runs.

Read through the store's run-folder reader
(:mod:`retrieval_bench.store.run_folder`): each run's ``config.json``, its
``queries.jsonl`` (the gold files after any gold remapping) and its per-stage
TREC runs ``runs/<dataset>/<stage>.trec``, optionally restricted to one split
(the row's ``split``, or the dataset's ``hash_split`` when the run set one).
Both the fitting (:mod:`retrieval_bench.rank_fusion.ltr_fit`) and its
out-of-fold check (:mod:`retrieval_bench.rank_fusion.ltr_selection`) read a
:class:`TrainingSet`; it imports neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.ltr_features import file_features, lift_to_files
from retrieval_bench.store.run_folder import (
    ResultsFileError,
    read_queries,
    read_run_config,
    stage_trec_path,
)
from retrieval_bench.store.stored_config import StoredConfig
from retrieval_bench.store.trec import read_run
from retrieval_bench.types import Run

__all__ = ["TrainingSet", "dataset_of", "load_training"]

FloatArray = npt.NDArray[np.float64]


def dataset_of(query_id: str) -> str:
    """The dataset of a stored question id (``dataset:id`` in runs of several datasets)."""
    return query_id.split(":", 1)[0] if ":" in query_id else ""


@dataclass
class TrainingSet:
    """Questions with their gold files and the lifted (file-level) runs per source."""

    sources: list[str]
    gold: dict[str, frozenset[str]] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    """Question id → its text (for ``query_features``)."""
    query_features: bool = False
    """Add the question-and-path features (``ltr_features.QUERY_FEATURES``)."""
    datasets: dict[str, str] = field(default_factory=dict)
    """Question id → the dataset it came from (the folds of ``--cross-fit dataset``)."""
    origins: list[dict[str, Any]] = field(default_factory=list)
    """Per stored run: its id, datasets, fingerprints and how many questions it gave."""
    _features: dict[str, tuple[list[str], FloatArray]] = field(
        default_factory=dict, init=False, repr=False
    )

    def features(self, query_id: str) -> tuple[list[str], FloatArray]:
        """Candidate files and feature rows of one question, computed once (the full
        model and every fold's model read the same rows)."""
        if query_id not in self._features:
            text = self.queries.get(query_id, "") if self.query_features else None
            self._features[query_id] = file_features(self.runs, self.sources, query_id, text)
        return self._features[query_id]

    def dataset_of(self, query_id: str) -> str:
        """The question's dataset (recorded by :func:`load_training`, else the ``name:``
        prefix of its id)."""
        return self.datasets.get(query_id) or dataset_of(query_id)

    @property
    def query_ids(self) -> list[str]:
        return sorted(self.gold)


def load_training(
    run_dirs: Sequence[Path], sources: Sequence[str], split: str | None = None
) -> TrainingSet:
    """Gather the questions of stored runs that ran every one of ``sources``; a run
    folder file that cannot be read is a :class:`ConfigError` naming it (and the
    line)."""
    from retrieval_bench.datasets.splits import question_splits

    if not sources:
        raise ConfigError("fit-ltr: name at least one source stage (--sources)")
    data = TrainingSet(sorted(sources))
    per_source: dict[str, dict[str, dict[str, float]]] = {s: {} for s in data.sources}
    for run_dir in run_dirs:
        try:
            cfg = read_run_config(run_dir)
            rows = read_queries(run_dir, ("query_id", "dataset", "gold_files"))
        except ResultsFileError as exc:
            raise ConfigError(f"fit-ltr: {exc}") from None
        stored = StoredConfig.from_saved(cfg)
        datasets = {name: d for d in stored.datasets if (name := d.get("name"))}
        keep: dict[str, frozenset[str]] = {}
        splits: dict[str, dict[str, str]] = {}
        for row in rows:
            ds = row["dataset"]
            if split is not None and ds not in splits:
                spec = datasets[ds]
                splits[ds] = question_splits(Path(spec["questions"]), spec.get("hash_split"))
            qid = row["query_id"]
            bare = qid.split(":", 1)[1] if qid.startswith(f"{ds}:") else qid
            if split is not None and splits[ds].get(bare) != split:
                continue
            if row["gold_files"]:
                keep[qid] = frozenset(row["gold_files"])
                data.datasets[qid] = ds
                data.queries[qid] = str(row.get("query", ""))
        for ds in datasets:
            for s in data.sources:
                try:
                    trec = stage_trec_path(run_dir, ds, s)
                except ValueError as exc:
                    raise ConfigError(f"fit-ltr: {exc}") from None
                if not trec.exists():
                    raise ConfigError(
                        f"fit-ltr: run {run_dir.name} has no stage {s!r} for dataset {ds} "
                        f"({trec} missing)"
                    )
                lifted = lift_to_files(read_run(trec, s))
                for q, docs in lifted.scores.items():
                    if q in keep:
                        per_source[s][q] = docs
        clash = sorted(set(keep) & set(data.gold))
        if clash:
            raise ConfigError(f"fit-ltr: question ids repeat across runs: {clash[:3]}")
        data.gold.update(keep)
        prov = cfg.get("provenance", {})
        data.origins.append({
            "run": run_dir.name,
            "datasets": sorted(datasets),
            "dataset_fingerprint": prov.get("dataset_fingerprint"),
            "config_fingerprint": prov.get("config_fingerprint"),
            "git_commit": prov.get("git_commit"),
            "questions": len(keep),
        })  # fmt: skip
    if not data.gold:
        raise ConfigError(f"fit-ltr: no labelled question in the runs (split {split!r})")
    data.runs = {s: Run(s, per_source[s]) for s in data.sources}
    return data

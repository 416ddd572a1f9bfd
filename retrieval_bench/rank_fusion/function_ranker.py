"""``function-ranker``: rank the *functions* of its inputs' best files
(docs/stages.md#function-ranker).

Localization is scored at file, module and function level
(docs/metrics.md#function-and-module-level); a file ranker ranks files only, and
``hierarchical`` orders a chunk ranker's chunks within them. This fusion ranks
definitions themselves, as the localization systems whose second step picks
functions within the files the first step found do (Agentless: Xia et al. 2024;
LocAgent: Chen et al. 2025), but with lexical evidence and a learned ranker
instead of an LLM: the candidates are the definitions of the union of each
input's top ``top_n`` files, each described by the features of
:mod:`~retrieval_bench.rank_fusion.function_features` (its own BM25 against the
issue, the names the issue and its traceback frames give, its file's rank in
each input, call relations to named definitions, size, kind, place) and scored

* by a LambdaMART model file written by ``rbench fit-functions``
  (``model_file``; :mod:`~retrieval_bench.rank_fusion.function_model`: a
  question of the training runs, or of a held-out dataset, is scored by the fold
  model that did not see it), or
* without one, by the untrained score
  :func:`~retrieval_bench.rank_fusion.function_features.default_scores`
  (``def:bm25_norm + file:best_rr + 0.5 · name:in_issue + 0.5 · frame:name``),
  which is what a run that records the training features uses.

The run holds ``entity:<path>:<Qualified.name>`` ids (the top ``k`` by score, ties
by id), so the module and function measures read them as named, and at file level
each counts as its file (docs/metrics.md#file-level-runs). Its inputs may be any
stages, read as they ranked (``lifts_inputs`` is False): each is lifted to files
here with the corpus for the file features, and a chunk input also gives each
definition its own rank in that input's function ranking. With ``record_features`` the
stage stores each question's candidate rows as its artifact
(``artifacts/<dataset>/<stage>.jsonl``: ``{"sources", "features", "candidates":
[[entity, [values]], ...]}``), what ``rbench fit-functions`` learns from.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.function_features import (
    default_scores,
    feature_names,
    query_rows,
)
from retrieval_bench.rank_fusion.function_model import KIND, FunctionModel
from retrieval_bench.rank_fusion.model_files import check_sources, path_as_text
from retrieval_bench.runs.file_ids import entity_id
from retrieval_bench.runs.lifting import file_level_run
from retrieval_bench.types import Run


def _compact(value: float) -> float | int:
    """A recorded feature value: an integer when it is one (shorter JSON)."""
    return int(value) if value == int(value) else value


class FunctionRanker(Fusion):
    """Rank the definitions of the inputs' top files (module doc).

    Parameters (:class:`Params`):
        top_n: candidate files: the union of each input's top ``top_n`` files.
        model_file: a model file from ``rbench fit-functions`` (None: the untrained score).
        record_features: store each question's candidate feature rows as its artifact.
        k1, b: the BM25 constants of ``def:bm25``.
        name: the fused run's name.
    """

    needs_queries = True
    needs_corpus = True
    lifts_inputs = False
    ranks = "chunks"

    class Params(StageParams):
        top_n: int = Field(default=10, ge=1)
        model_file: str | None = None
        record_features: bool = False
        k1: float = Field(default=1.2, ge=0)
        b: float = Field(default=0.75, ge=0, le=1)

        _path_as_text = field_validator("model_file", mode="before")(path_as_text)

    params: FunctionRanker.Params

    def __init__(
        self,
        params: FunctionRanker.Params | None = None,
        /,
        *,
        name: str = "function-ranker",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.model = FunctionModel.load(p.model_file) if p.model_file is not None else None
        self.queries: Mapping[str, str] = {}
        """The questions' text by id (the harness sets it: ``needs_queries``)."""
        self.scored_by: dict[str, int] = {}
        """Questions of the last :meth:`fuse` per model (``held_out_fold``,
        ``full_model``, ``untrained``)."""

    @classmethod
    def check_inputs(
        cls, params: Mapping[str, Any], searched: Collection[str], known: Collection[str]
    ) -> None:
        """Read the model file, when one is named, before any work: a missing, binary,
        non-JSON or malformed file, a booster that cannot be read, or a model fitted on
        stages that are not among the stage's ``inputs`` is a :class:`ConfigError`
        naming the file (each would fail every question of a run that says ``done``)."""
        path = params.get("model_file")
        if path is None:
            return
        if not isinstance(path, str | Path):
            raise ConfigError(f"{KIND}: model_file must be a path, not {path!r}")
        model = FunctionModel.load(path)
        check_sources(KIND, path, model.sources, params.get("inputs"))

    def _corpus(self) -> Corpus:
        corpus: Corpus | None = getattr(self, "corpus", None)
        if corpus is None:
            raise ConfigError(f"{KIND}: no corpus to read the candidate files from "
                              "(the harness sets it: needs_corpus)")  # fmt: skip
        return corpus

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """The top ``k`` candidate definitions per question, as ``entity:`` ids."""
        corpus = self._corpus()
        by_name = {run.name: run for run in runs}
        model = self.model
        sources = model.sources if model is not None else [run.name for run in runs]
        missing = [s for s in sources if s not in by_name]
        if missing:
            raise ConfigError(
                f"{KIND}: the model was fitted on stages {sources}; this run lacks "
                f"{missing} (add them with the same parameters, or re-fit)"
            )
        raw = [by_name[s] for s in sources]
        lifted = [file_level_run(run, corpus) for run in raw]
        names = feature_names(sources)
        p = self.params
        out: dict[str, dict[str, float]] = {}
        counts = {"held_out_fold": 0, "full_model": 0, "untrained": 0}
        for q in query_ids(runs):
            text = self.queries.get(q, "")
            cands, x = query_rows(
                corpus, lifted, q, text, top_n=p.top_n, k1=p.k1, b=p.b, raw_runs=raw
            )
            if model is None:
                scores = default_scores(x, names)
                counts["untrained"] += 1
            else:
                booster, held_out = model.model_for(q)
                scores = booster.predict(x) if cands else np.zeros(0)
                counts["held_out_fold" if held_out else "full_model"] += 1
            out[q] = {entity_id(c.entity): float(s) for c, s in zip(cands, scores, strict=True)}
            if p.record_features:
                self.artifacts[q] = {
                    "sources": list(sources),
                    "features": names,
                    "candidates": [
                        [c.entity, [_compact(v) for v in row.tolist()]]
                        for c, row in zip(cands, x, strict=True)
                    ],
                }
        self.scored_by = counts
        return Run(self.name, out).truncated(k)

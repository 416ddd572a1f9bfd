"""The retrieval funnel of one run: where the gold files go, step by step.

A run's pipeline narrows what reaches the answer: the retrievers' candidates,
then a fusion of them, then (optionally) rerankers, and finally the context —
the top ``k`` files of the last stage. For each step the funnel reports, over
all queries of the run:

* **recall**: the mean over queries of |gold files the step holds| / |gold
  files| (the same definition as ``R@k``, so the context step's recall equals
  the final stage's stored ``R@k``);
* **found**: how many gold files the step holds, summed over queries, out of
  all gold files (the page calls it *pooled*: a query with many gold files
  weighs more than in the mean recall);
* **lost**: gold files the previous step held that this step no longer holds,
  summed over queries. Before the first step stands the repository snapshot,
  so the first step loses the gold files that exist in the snapshot but are
  among no candidate (gold files missing from the snapshot are never counted
  as lost: no step could have found them).

Steps (:func:`plan`), for the pipeline that ends at a chosen stage:

1. ``candidates``: all candidates of every retriever when the chain starts at
   a fusion (its input is their union), else the one retriever's candidates;
2. ``fused``: the fusion's candidates (when the chain has one);
3. ``reranked``: each reranker's candidates, in pipeline order (when any);
4. ``context``: the top ``k`` files of the chosen stage.

Steps a run lacks are skipped. The step sets come from what a run stores:
full candidate lists from the TREC run files (``runs/<dataset>/<stage>.trec``;
chunk ids carry their file path, and a file-level stage's ``file:<path>`` and
``entity:<path>:<name>`` ids are that path, as scoring reads them:
:func:`doc_file`) and the top files from ``queries.jsonl``.
This module only computes; reading the files is :mod:`retrieval_bench.web.runs`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from retrieval_bench.runs.file_ids import file_path
from retrieval_bench.types import PARENT_ALL_RETRIEVERS, parent_inputs

__all__ = [
    "CONTEXT",
    "FunnelQuery",
    "FunnelStep",
    "PlannedStep",
    "chunk_path",
    "compute",
    "doc_file",
    "plan",
]

CONTEXT = "context"
"""Key of the last step: the chosen stage's top ``k`` files."""

_CHUNK_SUFFIX = re.compile(r":\d+-\d+:[0-9a-f]+$")


def chunk_path(chunk_id: str) -> str | None:
    """The file of a chunk id ``path:start-end:hash`` (None for any other id)."""
    m = _CHUNK_SUFFIX.search(chunk_id)
    return chunk_id[: m.start()] if m and m.start() > 0 else None


def doc_file(doc_id: str) -> str | None:
    """The file a stored run id stands for: a chunk id's path, the ``<path>`` of a
    file-level stage's ``file:<path>`` or ``entity:<path>:<name>`` id (code-graph,
    file-size, hierarchical, external, ltr, files-issue; whether or not the snapshot
    has the file, as scoring's ``ranked_files`` reads it); None for any other id."""
    return chunk_path(doc_id) or file_path(doc_id)


@dataclass(frozen=True)
class PlannedStep:
    """One funnel step before counting: which stages' files it holds."""

    key: str
    """``candidates``, ``fused``, ``reranked:<stage>`` (one per reranker) or ``context``."""
    label: str
    """What the page shows, e.g. ``candidates (bm25 ∪ exact)``."""
    stages: tuple[str, ...]
    """Stages whose candidate files (union) the step holds; for ``context`` the
    one stage whose top ``k`` files it holds."""


def _fused_inputs(stored: str | None, parents: Mapping[str, str | None]) -> tuple[str, ...]:
    """The stages a fusion read, from its stored parent: its input labels, or every
    retriever of the run for a run stored before fusions declared inputs."""
    if stored == PARENT_ALL_RETRIEVERS:
        return tuple(s for s, par in parents.items() if parent_inputs(par) is None)
    return parent_inputs(stored) or ()


def plan(parents: Mapping[str, str | None], final: str, k: int) -> list[PlannedStep]:
    """The steps of the pipeline ending at ``final``.

    ``parents`` maps every stage of the run (in pipeline order) to its parent as
    stored (:attr:`~retrieval_bench.types.StageResult.parent`): ``corpus`` for a
    retriever (``None`` reads as one too), the input labels joined by ``, `` for a
    fusion (``retrievers``: every retriever, in runs stored before fusions declared
    inputs), the input stage's name for a reranker. The chain follows single inputs
    back to a retriever or a stage with several inputs (a fusion); a chain whose
    start cannot be told (a reranker's input the run did not store) gets only the
    ``context`` step.
    """
    chain = [final]
    seen = {final}
    while True:
        stored = parents.get(chain[-1])
        inputs = parent_inputs(stored)
        if inputs is None or stored == PARENT_ALL_RETRIEVERS or len(inputs) > 1:
            break  # a retriever, or a fusion of several stages: the chain's root
        (p,) = inputs
        if p not in parents or p in seen:  # an input this run did not store, or a cycle
            break
        chain.append(p)
        seen.add(p)
    chain.reverse()  # pipeline order: root first
    root, rerankers = chain[0], chain[1:]
    steps: list[PlannedStep] = []
    root_parent = parents.get(root)
    root_inputs = parent_inputs(root_parent)
    if root_parent == PARENT_ALL_RETRIEVERS or (root_inputs and len(root_inputs) > 1):
        fed = _fused_inputs(root_parent, parents)
        if fed:
            steps.append(PlannedStep("candidates", f"candidates ({' ∪ '.join(fed)})", fed))
        steps.append(PlannedStep("fused", f"fused ({root})", (root,)))
    elif root_inputs is None:
        steps.append(PlannedStep("candidates", f"candidates ({root})", (root,)))
    else:
        rerankers = []  # the chain's start is unknown: its rerankers cannot be placed either
    steps += [PlannedStep(f"reranked:{r}", f"reranked ({r})", (r,)) for r in rerankers]
    steps.append(PlannedStep(CONTEXT, f"context (top {k} files of {final})", (final,)))
    return steps


@dataclass(frozen=True)
class FunnelQuery:
    """One query's gold files and the files each step holds."""

    query_id: str
    gold: frozenset[str]
    missing: frozenset[str]
    """Gold files not in the snapshot (never counted as lost)."""
    steps: Mapping[str, Collection[str]]
    """Step key → files the step holds for this query."""


@dataclass(frozen=True)
class FunnelStep:
    """One counted step of the funnel."""

    key: str
    label: str
    recall: float
    """Mean over queries with gold files of found / gold (NaN when none has gold)."""
    found: int
    """Gold files the step holds, summed over queries."""
    gold: int
    """Gold files, summed over queries (the denominator of ``found``)."""
    lost: int
    """Gold files the previous step held and this one does not, summed over queries."""
    n_queries: int


def compute(steps: Sequence[PlannedStep], queries: Sequence[FunnelQuery]) -> list[FunnelStep]:
    """Count each planned step over ``queries`` (see the module docstring).

    A step absent from a query's ``steps`` holds nothing for that query. Only
    queries with at least one gold file count.
    """
    judged = [q for q in queries if q.gold]
    gold_total = sum(len(q.gold) for q in judged)
    previous = {q.query_id: set(q.gold - q.missing) for q in judged}  # the snapshot's gold
    out: list[FunnelStep] = []
    for step in steps:
        found_total = lost_total = 0
        ratios: list[float] = []
        current: dict[str, set[str]] = {}
        for q in judged:
            found = set(q.gold) & set(q.steps.get(step.key, ()))
            current[q.query_id] = found
            found_total += len(found)
            lost_total += len(previous[q.query_id] - found)
            ratios.append(len(found) / len(q.gold))
        recall = math.fsum(ratios) / len(ratios) if ratios else math.nan
        out.append(FunnelStep(step.key, step.label, recall, found_total, gold_total, lost_total,
                              len(judged)))  # fmt: skip
        previous = current
    return out

"""Per-question snapshots: a dataset's questions grouped by the snapshot they are
asked against, each group run as one task on the run's executor
(docs/datasets.md#per-question-snapshots, docs/architecture.md#executors).

Which snapshot a row names is read by :mod:`~retrieval_bench.snapshot.refs`;
``repo`` + ``commit`` rows are resolved to exact commits up front (one git call
per repository), so rows asked at one commit form one group and a commit the
mirror lacks is a failed group at once. Trees are extracted by the task that
needs them. A group whose snapshot cannot be opened or chunked is skipped with
one warning line and recorded in the provenance; the other groups run, and its
questions stay in the dataset as misses, 0 in every metric
(docs/metrics.md#questions-that-could-not-be-run). Each
finished group is checkpointed (:mod:`~retrieval_bench.harness.run.checkpoints`),
and the groups of a dataset are merged, in group order whatever the executor,
into one :class:`DatasetOutcome`, so the tables, drill-down and stored runs
cover every question of the dataset.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from retrieval_bench.config import BenchmarkConfig, DatasetSpec
from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.jsonl import dataset_fingerprint
from retrieval_bench.errors import SnapshotError
from retrieval_bench.harness.answers.dataset import DatasetAnswers
from retrieval_bench.harness.run.checkpoints import Checkpoints, group_key
from retrieval_bench.harness.run.executors import Executor, SerialExecutor
from retrieval_bench.harness.run.prepare import PreparedDataset, Progress, select_questions
from retrieval_bench.harness.run.results import DatasetOutcome
from retrieval_bench.harness.run.snapshot_work import GroupResult, GroupTask, run_group, score_unrun
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.plan import Plan
from retrieval_bench.snapshot import Snapshot
from retrieval_bench.snapshot.refs import SnapshotRef, resolve_repo_refs, row_ref
from retrieval_bench.snapshot.sources import repo_locations
from retrieval_bench.types import Example, Run, StageResult
from retrieval_bench.workspace import Workspace

NAMESPACE_SEP = ":"
"""``<dataset>:<id>``: URL- and TREC-safe (``/`` would need encoding in the web UI)."""


def namespaced(example: Example, dataset: str) -> Example:
    return replace(example, id=f"{dataset}{NAMESPACE_SEP}{example.id}")


def colliding_ids(cfg: BenchmarkConfig) -> bool:
    """Whether two datasets of the run share a question id (then every id of the run
    is stored as ``<dataset>:<id>``)."""
    seen: set[str] = set()
    for spec in cfg.datasets:
        _, examples, _ = select_questions(spec)
        ids = {e.id for e in examples}
        if ids & seen:
            return True
        seen |= ids
    return False


def namespace_prepared(ds: PreparedDataset) -> PreparedDataset:
    """The prepared dataset with its questions renamed to ``<dataset>:<id>`` (a new one)."""
    name = ds.spec.name
    return replace(
        ds,
        examples=[namespaced(e, name) for e in ds.examples],
        train_examples=[namespaced(e, name) for e in ds.train_examples],
        missing_gold={f"{name}{NAMESPACE_SEP}{q}": v for q, v in ds.missing_gold.items()},
    )


def is_grouped(spec: DatasetSpec) -> bool:
    """Whether some selected row of ``spec`` names its own snapshot."""
    _, examples, train = select_questions(spec)
    return any(row_ref(e, spec) is not None for e in [*examples, *train])


@dataclass
class Group:
    ref: SnapshotRef | None
    examples: list[Example] = field(default_factory=list)
    train: list[Example] = field(default_factory=list)


@dataclass
class GroupedDataset:
    """A dataset whose questions span several snapshots, planned but not yet run."""

    shell: PreparedDataset
    groups: list[Group]


def _failure(spec: DatasetSpec, label: str, ids: Sequence[str], reason: str) -> dict[str, object]:
    n = len(ids)
    print(
        f"  warning: dataset {spec.name}: snapshot {label} skipped "
        f"({n} question{'s' if n != 1 else ''}): {reason}",
        file=sys.stderr,
    )
    return {"snapshot": label, "reason": reason, "query_ids": list(ids)}


def plan_groups(
    spec: DatasetSpec, cfg: BenchmarkConfig, ws: Workspace, namespace: bool
) -> GroupedDataset:
    """Group the dataset's questions by the exact snapshot they are asked against.

    ``repo`` + ``commit`` rows are resolved now (a missing commit, a bundle that
    is not one: a failed group, reported here); trees are extracted later, by
    the task that runs the group. Raises :class:`SnapshotError` when no group
    is left to run.
    """
    loaded, examples, train = select_questions(spec)
    if namespace:
        examples = [namespaced(e, spec.name) for e in examples]
        train = [namespaced(e, spec.name) for e in train]
    rows: list[tuple[str, Example, SnapshotRef | None]] = [
        *(("examples", e, row_ref(e, spec)) for e in examples),
        *(("train", e, row_ref(e, spec)) for e in train),
    ]
    refs = list(dict.fromkeys(ref for _, _, ref in rows if ref is not None))
    resolved = resolve_repo_refs(refs, ws.snapshots_dir.expanduser().resolve(),
                                 repo_locations(cfg.repos))  # fmt: skip
    by_ref: dict[SnapshotRef | None, Group] = {}
    broken: dict[SnapshotRef, tuple[SnapshotError, list[str]]] = {}
    for key, example, ref in rows:
        exact = resolved[ref] if ref is not None else None
        if isinstance(exact, SnapshotError):
            assert ref is not None
            if key == "examples":
                broken.setdefault(ref, (exact, []))[1].append(example.id)
            continue
        getattr(by_ref.setdefault(exact, Group(exact)), key).append(example)
    failures = [
        _failure(spec, ref.label, ids, str(exc)) for ref, (exc, ids) in broken.items() if ids
    ]
    groups = [g for g in by_ref.values() if g.examples]
    if not groups:
        first = failures[0]["reason"] if failures else "no questions"
        raise SnapshotError(f"dataset {spec.name}: no snapshot could be opened (first: {first})")
    labels = sorted(_label(g.ref, spec) for g in groups)
    fingerprint = hashlib.sha256("\n".join(labels).encode()).hexdigest()
    placeholder = Snapshot(ws.snapshots_dir, f"{len(groups)} snapshots", "groups", fingerprint)
    shell = PreparedDataset(
        spec=spec,
        snapshot=placeholder,
        examples=examples,
        row_errors=list(loaded.errors),
        missing_gold={},
        corpus=Corpus(ws.snapshots_dir, []),
        fingerprint=dataset_fingerprint(examples),
        train_examples=[e for g in groups for e in g.train],
        snapshot_failures=failures,
        failed_questions=failed_ids(failures),
    )
    return GroupedDataset(shell, groups)


def failed_ids(failures: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Question id → why it could not be run, from snapshot failure entries."""
    return {str(q): str(f["reason"]) for f in failures for q in f["query_ids"]}


def _label(ref: SnapshotRef | None, spec: DatasetSpec) -> str:
    return ref.label if ref is not None else str(spec.snapshot)


def group_tasks(grouped: GroupedDataset, plan: Plan, ws: Workspace) -> list[GroupTask]:
    """One picklable task per snapshot group, keyed by what its results depend on."""
    spec, config = grouped.shell.spec, plan.config.results_dump()
    tasks = []
    for i, g in enumerate(grouped.groups):
        label = _label(g.ref, spec)
        ids = [e.id for e in [*g.examples, *g.train]]
        key = group_key(config, spec.name, f"{g.ref!r}", ids)
        tasks.append(GroupTask(i, key, spec, plan, ws, g.ref, label,
                               tuple(g.examples), tuple(g.train)))  # fmt: skip
    return tasks


def run_groups(
    grouped: GroupedDataset,
    tasks: Sequence[GroupTask],
    executor: Executor,
    checkpoints: Checkpoints[GroupResult] | None = None,
    llm_provider: LazyLLM | None = None,
    progress: Progress | None = None,
) -> tuple[DatasetOutcome, list[DatasetAnswers], dict[str, Any]]:
    """Run every group's task on ``executor`` (groups a checkpoint holds are taken
    from it), then merge the outcomes in group order. Returns the merged outcome,
    the groups' answers and what the workers report for the provenance."""
    shell = grouped.shell
    results: dict[int, GroupResult] = {}
    todo: list[GroupTask] = []
    for task in tasks:
        kept = checkpoints.load(task.key) if checkpoints is not None else None
        if kept is not None:
            results[task.index] = replace(kept, index=task.index)
        else:
            todo.append(task)
    label = f"{shell.spec.name} snapshots"
    if results:  # said even with --json (stderr), like the warnings
        print(f"  [{shell.spec.name}] resumed {len(results)} finished snapshot(s) "
              f"from checkpoints; {len(todo)} to run", file=sys.stderr)  # fmt: skip
    fn = run_group
    if isinstance(executor, SerialExecutor):  # same process: share the LLM and the reporter
        fn = functools.partial(run_group, llm_provider=llm_provider, progress=progress)
    done = len(results)
    # in parallel, the first group runs alone: it fills the chunk (and embedding) caches
    # that the others then reuse, instead of every worker chunking the cold tree at once
    waves = [todo] if isinstance(executor, SerialExecutor) else [todo[:1], todo[1:]]
    finished = (
        (wave[position], result)
        for wave in waves if wave
        for position, result in executor.map_unordered(fn, wave)
    )  # fmt: skip
    for task, result in finished:
        results[task.index] = result
        if checkpoints is not None:
            checkpoints.save(result)
        done += 1
        if progress is not None:
            state = "skipped" if result.failure else f"{result.seconds:.1f}s"
            progress.note(f"[{shell.spec.name}] snapshot {result.label}: "
                          f"{len(result.query_ids)} question(s), {state}")  # fmt: skip
            progress(label, done, len(tasks), "snapshots")
    return _merge(grouped, [results[t.index] for t in tasks], tasks[0].cfg)


def _merge(
    grouped: GroupedDataset, results: Sequence[GroupResult], cfg: BenchmarkConfig
) -> tuple[DatasetOutcome, list[DatasetAnswers], dict[str, Any]]:
    shell = grouped.shell
    failures, entries = list(shell.snapshot_failures), list(shell.snapshot_groups)
    outcomes: list[DatasetOutcome] = []
    answers: list[DatasetAnswers] = []
    provenance: dict[str, Any] = {}
    for r in results:
        if r.failure is not None or r.outcome is None:
            reason = r.failure or "no result"
            failures.append(_failure(shell.spec, r.label, r.query_ids, reason))
            continue
        entries.append({**r.entry, "seconds": r.seconds, "worker": r.worker})
        outcomes.append(r.outcome)
        if r.answers is not None:
            answers.append(r.answers)
        for key, value in r.provenance.items():
            if isinstance(value, dict):
                provenance.setdefault(key, {}).update(value)
            else:
                provenance[key] = value
    if not outcomes:
        first = failures[0]["reason"] if failures else "no questions"
        raise SnapshotError(f"dataset {shell.spec.name}: no snapshot could be run (first: {first})")
    shell = replace(shell, snapshot_failures=failures, snapshot_groups=entries)
    return merge_outcomes(shell, outcomes, cfg), answers, provenance


def merge_outcomes(
    shell: PreparedDataset, outcomes: Sequence[DatasetOutcome], cfg: BenchmarkConfig
) -> DatasetOutcome:
    """One outcome per dataset from its groups' outcomes (query ids are disjoint); its
    dataset is a new one, ``shell`` with the groups' questions, chunks, missing gold,
    chunk counts and timings (``shell`` itself is left as it is).

    The questions of ``shell.snapshot_failures`` stay in the dataset, scored 0 in
    every stage (:func:`~retrieval_bench.harness.run.snapshot_work.score_unrun`), and
    are listed in its ``failed_questions``."""
    kept = {e.id: e for o in outcomes for e in o.prepared.examples}  # gold as scored
    asked = {e.id for e in shell.examples}
    failed = {q: r for q, r in failed_ids(shell.snapshot_failures).items()
              if q in asked and q not in kept}  # fmt: skip
    unrun = [e for e in shell.examples if e.id in failed]
    chunks = {c.id: c for o in outcomes for c in o.prepared.corpus.chunks}
    tokenizer = next((o.prepared.corpus.tokenizer for o in outcomes), "")
    missing, reasons, remapped = (dict(shell.missing_gold), dict(shell.missing_reasons),
                                  dict(shell.remapped_gold))  # fmt: skip
    chunk_stats, timings = dict(shell.chunk_stats), dict(shell.timings)
    for o in outcomes:
        missing.update(o.prepared.missing_gold)
        reasons.update(o.prepared.missing_reasons)
        remapped.update(o.prepared.remapped_gold)
        for key, n in o.prepared.chunk_stats.items():
            chunk_stats[key] = chunk_stats.get(key, 0) + n
        for key, sec in o.prepared.timings.items():
            timings[key] = timings.get(key, 0.0) + sec
    dataset = replace(
        shell,
        examples=[kept.get(e.id, e) for e in shell.examples if e.id in kept or e.id in failed],
        train_examples=[e for o in outcomes for e in o.prepared.train_examples],
        corpus=Corpus(shell.corpus.root, list(chunks.values()), tokenizer),
        failed_questions=failed,
        missing_gold=missing,
        missing_reasons=reasons,
        remapped_gold=remapped,
        chunk_stats=chunk_stats,
        timings=timings,
    )
    merged = DatasetOutcome(dataset, _merge_stages(outcomes), {})
    for o in outcomes:
        for stage, rows in o.per_query.items():
            merged.per_query.setdefault(stage, {}).update(rows)
        for stage, lost in o.lost.items():
            merged.lost.setdefault(stage, {}).update(lost)
    for stage, rows in score_unrun(unrun, list(merged.per_query), cfg).items():
        merged.per_query[stage].update(rows)
    return merged


def _merge_stages(outcomes: Sequence[DatasetOutcome]) -> list[StageResult]:
    merged: dict[str, StageResult] = {}
    for o in outcomes:
        for s in o.stages:
            m = merged.setdefault(s.name, StageResult(s.name, Run(s.run.name), inputs=s.inputs))
            m.run.scores.update(s.run.scores)
            m.seconds += s.seconds
            m.llm_calls += s.llm_calls
            m.llm_tokens += s.llm_tokens
            m.llm_cache_hits += s.llm_cache_hits
            m.failures.update(s.failures)
            m.artifacts.update(s.artifacts)
            for name, sec in s.loads.items():
                m.loads[name] = m.loads.get(name, 0.0) + sec
            for key, n in s.index_stats.items():
                m.index_stats[key] = m.index_stats.get(key, 0) + n
    return list(merged.values())

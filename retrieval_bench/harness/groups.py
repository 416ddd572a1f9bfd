"""Per-question snapshots: a dataset's questions grouped by the snapshot they are
asked against (docs/datasets.md#per-question-snapshots).

A row names its snapshot with ``snapshot`` (folder, tarball, ``git+URL@commit``,
``name==version``; a relative path is relative to the questions file) or with
``repo`` + ``commit`` (``base_commit``), resolved through
:mod:`retrieval_bench.snapshot_sources`; a row without one uses the dataset's
``snapshot:``. Each distinct snapshot is opened once, before the run starts; a
group whose snapshot cannot be opened (or chunked) is skipped with one warning
line and recorded in the provenance, the other groups run. After its stages ran
and were scored, a group's corpus is cut down to the chunks its runs name, and
the groups of a dataset are merged into one :class:`DatasetOutcome`, so the
tables, drill-down and stored runs cover every question of the dataset.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from retrieval_bench.config import BenchmarkConfig, DatasetSpec
from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.jsonl import dataset_fingerprint
from retrieval_bench.errors import RBenchError, SnapshotError
from retrieval_bench.harness.pipeline import (
    PreparedDataset,
    Progress,
    open_dataset_snapshot,
    prepare_snapshot,
    select_questions,
)
from retrieval_bench.harness.results import DatasetOutcome
from retrieval_bench.snapshot import Snapshot, open_snapshot
from retrieval_bench.snapshot_sources import (
    is_tarball,
    open_repo,
    open_tarball,
    repo_locations,
    repo_source,
)
from retrieval_bench.types import Example, Run, StageResult
from retrieval_bench.workspace import Workspace

NAMESPACE_SEP = ":"
"""``<dataset>:<id>``: URL- and TREC-safe (``/`` would need encoding in the web UI)."""


@dataclass(frozen=True)
class SnapshotRef:
    """The snapshot one row names."""

    kind: Literal["spec", "tarball", "repo"]
    target: str
    """The snapshot string, the tarball's path, or ``owner/name``."""
    commit: str = ""
    parent: bool = False
    sha256: str | None = None

    @property
    def label(self) -> str:
        if self.kind == "repo":
            return f"{self.target}@{self.commit[:12]}{'^' if self.parent else ''}"
        return Path(self.target).name if self.kind == "tarball" else self.target


def row_ref(example: Example, spec: DatasetSpec) -> SnapshotRef | None:
    """The snapshot ``example`` names itself, None when it uses the dataset's."""
    meta = example.meta
    snap = meta.get("snapshot")
    base = Path(spec.questions).parent
    if isinstance(snap, str) and snap.strip():
        snap = snap.strip()
        local = not any(m in snap for m in ("==", "@", "://"))
        if local and not Path(snap).expanduser().is_absolute():
            snap = str((base / Path(snap).expanduser()).resolve())
        if local and is_tarball(snap):
            sha = meta.get("snapshot_sha256")
            return SnapshotRef("tarball", snap, sha256=sha if isinstance(sha, str) else None)
        return SnapshotRef("spec", snap)
    repo = meta.get("repo") or spec.repo
    commit = meta.get("commit") or meta.get("base_commit")
    if isinstance(repo, str) and repo.strip() and isinstance(commit, str) and commit.strip():
        parent = spec.commit_is == "parent"
        return SnapshotRef("repo", repo.strip(), commit.strip(), parent=parent)
    return None


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


def namespace_prepared(ds: PreparedDataset) -> None:
    """Rename the questions of a prepared dataset to ``<dataset>:<id>`` in place."""
    name = ds.spec.name
    ds.examples = [namespaced(e, name) for e in ds.examples]
    ds.train_examples = [namespaced(e, name) for e in ds.train_examples]
    ds.missing_gold = {f"{name}{NAMESPACE_SEP}{q}": v for q, v in ds.missing_gold.items()}


def is_grouped(spec: DatasetSpec) -> bool:
    """Whether some selected row of ``spec`` names its own snapshot."""
    _, examples, train = select_questions(spec)
    return any(row_ref(e, spec) is not None for e in [*examples, *train])


@dataclass
class Group:
    ref: SnapshotRef | None
    examples: list[Example] = field(default_factory=list)
    train: list[Example] = field(default_factory=list)
    snapshot: Snapshot | None = None
    seconds: float = 0.0


@dataclass
class GroupedDataset:
    """A dataset whose questions span several snapshots, opened but not yet chunked."""

    shell: PreparedDataset
    groups: list[Group]


def _open(
    ref: SnapshotRef | None, spec: DatasetSpec, ws: Workspace, repos: Mapping[str, str]
) -> Snapshot:
    if ref is None:
        return open_dataset_snapshot(spec, ws)
    if ref.kind == "tarball":
        return open_tarball(Path(ref.target), ws.snapshots_dir, expected_sha256=ref.sha256)
    if ref.kind == "repo":
        source = repo_source(ref.target, repos)
        return open_repo(ref.target, ref.commit, ws.snapshots_dir, source=source, parent=ref.parent)
    return open_snapshot(ref.target, ws.snapshots_dir)


def _failure(spec: DatasetSpec, label: str, ids: Sequence[str], reason: str) -> dict[str, object]:
    n = len(ids)
    print(
        f"  warning: dataset {spec.name}: snapshot {label} skipped "
        f"({n} question{'s' if n != 1 else ''}): {reason}",
        file=sys.stderr,
    )
    return {"snapshot": label, "reason": reason, "query_ids": list(ids)}


def open_groups(
    spec: DatasetSpec, cfg: BenchmarkConfig, ws: Workspace, namespace: bool
) -> GroupedDataset:
    """Group the dataset's questions by snapshot and open every snapshot once.

    Raises :class:`~retrieval_bench.errors.SnapshotError` when no snapshot opens.
    """
    loaded, examples, train = select_questions(spec)
    if namespace:
        examples = [namespaced(e, spec.name) for e in examples]
        train = [namespaced(e, spec.name) for e in train]
    repos = repo_locations(cfg.repos)
    by_ref: dict[SnapshotRef | None, Group] = {}
    for key, items in (("examples", examples), ("train", train)):
        for e in items:
            ref = row_ref(e, spec)
            getattr(by_ref.setdefault(ref, Group(ref)), key).append(e)
    failures: list[dict[str, object]] = []
    opened: list[Group] = []
    for group in by_ref.values():
        label = group.ref.label if group.ref else str(spec.snapshot)
        t0 = time.perf_counter()
        try:
            group.snapshot = _open(group.ref, spec, ws, repos)
        except RBenchError as exc:
            ids = [e.id for e in group.examples]
            failures.append(_failure(spec, label, ids, str(exc)))
            continue
        group.seconds = time.perf_counter() - t0
        if group.examples:
            opened.append(group)
    if not opened:
        first = failures[0]["reason"] if failures else "no questions"
        raise SnapshotError(f"dataset {spec.name}: no snapshot could be opened (first: {first})")
    kept = [e for g in opened for e in g.examples]
    first_snap = opened[0].snapshot
    assert first_snap is not None
    shell = PreparedDataset(
        spec=spec,
        snapshot=first_snap,
        examples=kept,
        row_errors=list(loaded.errors),
        missing_gold={},
        corpus=Corpus(first_snap.root, []),
        fingerprint=dataset_fingerprint(kept),
        train_examples=[e for g in opened for e in g.train],
        snapshot_failures=failures,
    )
    shell.timings["snapshot"] = sum(g.seconds for g in by_ref.values())
    shell.snapshot_groups = [_group_entry(g) for g in opened]
    return GroupedDataset(shell, opened)


def _group_entry(g: Group) -> dict[str, object]:
    assert g.snapshot is not None
    return {
        "snapshot": g.snapshot.source,
        "kind": g.snapshot.kind,
        "fingerprint": g.snapshot.fingerprint,
        "query_ids": [e.id for e in g.examples],
    }


RunStages = Callable[[PreparedDataset], DatasetOutcome]


def run_groups(
    grouped: GroupedDataset,
    cfg: BenchmarkConfig,
    ws: Workspace,
    run_stages: RunStages,
    progress: Progress | None = None,
) -> DatasetOutcome:
    """Chunk each group's snapshot, run and score its stages, merge the outcomes."""
    shell, outcomes = grouped.shell, []
    for group, entry in zip(grouped.groups, list(shell.snapshot_groups), strict=True):
        assert group.snapshot is not None
        try:
            ds = prepare_snapshot(
                shell.spec, cfg, ws, group.snapshot, group.examples, group.train,
                [], progress, {"snapshot": group.seconds},
            )  # fmt: skip
        except RBenchError as exc:
            ids = [e.id for e in group.examples]
            label = str(entry["snapshot"])
            shell.snapshot_failures.append(_failure(shell.spec, label, ids, str(exc)))
            shell.snapshot_groups.remove(entry)
            continue
        outcome = run_stages(ds)
        entry["n_chunks"] = len(ds.corpus.chunks)
        entry["timings"] = dict(ds.timings)
        entry.update(ds.chunk_stats)  # files_chunked / files_reused
        _slim(outcome)
        outcomes.append(outcome)
    return merge_outcomes(shell, outcomes)


def _slim(outcome: DatasetOutcome) -> None:
    """Keep only the chunks the group's runs name (what the drill-down and the
    threshold sweeps map to files); the texts and the index are let go."""
    ds = outcome.prepared
    wanted = {c for s in outcome.stages for d in s.run.scores.values() for c in d}
    chunks = [replace(c, text="") for c in ds.corpus.chunks if c.id in wanted]
    ds.corpus = Corpus(ds.corpus.root, chunks, ds.corpus.tokenizer, ds.corpus.skipped)
    ds.codebase_index = None


def merge_outcomes(shell: PreparedDataset, outcomes: Sequence[DatasetOutcome]) -> DatasetOutcome:
    """One outcome per dataset from its groups' outcomes (query ids are disjoint)."""
    kept = {e.id for o in outcomes for e in o.prepared.examples}
    shell.examples = [e for e in shell.examples if e.id in kept]
    shell.train_examples = [e for o in outcomes for e in o.prepared.train_examples]
    chunks = {c.id: c for o in outcomes for c in o.prepared.corpus.chunks}
    tokenizer = next((o.prepared.corpus.tokenizer for o in outcomes), "")
    shell.corpus = Corpus(shell.corpus.root, list(chunks.values()), tokenizer)
    for o in outcomes:
        shell.missing_gold.update(o.prepared.missing_gold)
        shell.missing_reasons.update(o.prepared.missing_reasons)
        for key, n in o.prepared.chunk_stats.items():
            shell.chunk_stats[key] = shell.chunk_stats.get(key, 0) + n
        for key, sec in o.prepared.timings.items():
            if key != "snapshot":
                shell.timings[key] = shell.timings.get(key, 0.0) + sec
    merged = DatasetOutcome(shell, _merge_stages(outcomes), {})
    for o in outcomes:
        for stage, rows in o.per_query.items():
            merged.per_query.setdefault(stage, {}).update(rows)
        for stage, lost in o.lost.items():
            merged.lost.setdefault(stage, {}).update(lost)
    return merged


def _merge_stages(outcomes: Sequence[DatasetOutcome]) -> list[StageResult]:
    merged: dict[str, StageResult] = {}
    for o in outcomes:
        for s in o.stages:
            m = merged.setdefault(s.name, StageResult(s.name, Run(s.run.name), parent=s.parent))
            m.run.scores.update(s.run.scores)
            m.seconds += s.seconds
            m.llm_calls += s.llm_calls
            m.llm_tokens += s.llm_tokens
            m.llm_cache_hits += s.llm_cache_hits
            m.failures.update(s.failures)
            m.artifacts.update(s.artifacts)
            for name, sec in s.loads.items():
                m.loads[name] = m.loads.get(name, 0.0) + sec
    return list(merged.values())

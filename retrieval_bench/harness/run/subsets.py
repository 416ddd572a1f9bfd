"""Which stored queries belong to a reported subset (``all``, ``dataset=NAME``,
``KEY=true|false``), recovered after the fact for ``rbench compare``.

``dataset=NAME`` comes from the dataset recorded per query in
``results/<run>/query_metrics.jsonl``; a boolean-meta subset (e.g.
``leaks_path=false``) is recovered by reloading the run's questions file, and
only when its fingerprint still matches the one recorded with the run — an
edited questions file would silently change the subset otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError
from retrieval_bench.store.db import ResultsDB


def subset_members(db: ResultsDB, run_id: str, subset: str, results: Path) -> set[str] | None:
    """Query ids of ``subset`` in ``run_id`` (``None`` for all queries)."""
    if subset == "all":
        return None
    run = db.get_run(run_id)
    datasets = [d for d in run.config.get("datasets", []) if isinstance(d, dict)]
    names = [str(d.get("name")) for d in datasets]
    key, sep, value = subset.partition("=")
    known = db.subsets(run_id) + [f"dataset={n}" for n in names]
    if not sep or subset not in known:
        raise ConfigError(
            f"run {run_id} has no subset {subset!r}; its subsets: {', '.join(sorted(set(known)))}"
        )
    if key == "dataset":
        path = results / run_id / "query_metrics.jsonl"
        if not path.is_file():
            raise ConfigError(
                f"cannot tell which queries of run {run_id} are in {subset}: {path} is missing; "
                "compare with --subset all"
            )
        with path.open(encoding="utf-8") as fh:
            return {r["query_id"] for r in map(json.loads, fh) if r.get("dataset") == value}
    return _meta_members(run_id, datasets, run.provenance, key, value)


def _meta_members(
    run_id: str, datasets: list[dict[str, Any]], prov: Mapping[str, Any], key: str, value: str
) -> set[str]:
    from retrieval_bench.datasets.jsonl import dataset_fingerprint, load_examples

    members: set[str] = set()
    for spec in datasets:
        name, questions = spec.get("name"), spec.get("questions")
        recorded = prov.get("datasets", {}).get(name, {}).get("dataset_fingerprint")
        hint = f"cannot recover subset {key}={value} of run {run_id}"
        if not questions or not Path(questions).is_file():
            raise ConfigError(f"{hint}: its questions file {questions} is gone; use --subset all")
        examples = [
            e
            for e in load_examples(questions).examples
            if spec.get("split") is None or e.split == spec.get("split")
        ]
        if spec.get("limit"):
            examples = examples[: int(spec["limit"])]
        if recorded is None or dataset_fingerprint(examples) != recorded:
            raise ConfigError(
                f"{hint}: {questions} changed since the run (fingerprint differs); "
                "use --subset all or dataset=NAME"
            )
        members |= {
            e.id for e in examples if key in e.meta and str(bool(e.meta[key])).lower() == value
        }
    return members

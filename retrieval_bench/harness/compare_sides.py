"""What ``rbench compare`` checks about two runs before pairing their queries
(docs/metrics.md#multiple-comparisons): which config and which data each run
was measured with, and whether both saw the same questions.

Queries are paired by id. Two datasets can share ids (``q1``, ``q2`` ...) that
name different questions, and pairing those would compare different questions
as if they were one. So when the dataset fingerprints of two benchmark runs
differ, the comparison is refused with :class:`DifferentDataError`, unless the
caller allows it (``--allow-different-data``); then the comparison carries a
warning that its output prints. With ``--subset dataset=NAME`` the fingerprints
of that dataset alone are compared, so two runs that share one dataset compare
on it. ``rbench eval`` runs are not checked: their fingerprint is that of the
predictions file, which differs between any two prediction files of the same
questions — the very thing such a comparison is for.
"""

from __future__ import annotations

from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.comparison import RunSide
from retrieval_bench.store.records import RunRecord

__all__ = ["DifferentDataError", "check_same_data", "run_side"]


class DifferentDataError(ConfigError):
    """Two runs measured on different data; ``detail`` says so without the CLI's hint
    (the web page offers its own way to compare anyway)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"{detail}; compare runs on the same dataset, or pass --allow-different-data "
            "to pair them by id anyway"
        )
        self.detail = detail


def run_side(run: RunRecord) -> RunSide:
    """The config and data ``run`` was measured with, as its record holds them."""
    datasets = [d for d in run.config.get("datasets") or [] if isinstance(d, dict)]
    names = [str(d["name"]) for d in datasets if d.get("name")]
    kind = "eval" if run.config.get("kind") == "eval" else "benchmark"
    if kind == "eval" and run.config.get("predictions"):
        names = [str(run.config["predictions"])]
    recorded = run.provenance.get("datasets")
    per_dataset = {
        str(name): str(info["dataset_fingerprint"])
        for name, info in (recorded.items() if isinstance(recorded, dict) else ())
        if isinstance(info, dict) and info.get("dataset_fingerprint")
    }
    config_fp = run.provenance.get("config_fingerprint")
    return RunSide(
        run_id=run.id,
        name=run.name,
        config_fingerprint=str(config_fp) if config_fp else None,
        datasets=names,
        dataset_fingerprint=run.dataset_fingerprint,
        dataset_fingerprints=per_dataset,
        kind=kind,
    )


def _fingerprint(side: RunSide, subset: str) -> tuple[str, str] | None:
    """(what, fingerprint) the check compares for ``subset``; None when unknown."""
    key, sep, name = subset.partition("=")
    if sep and key == "dataset" and name in side.dataset_fingerprints:
        return name, side.dataset_fingerprints[name][:16]
    if side.dataset_fingerprint is None:
        return None
    return ", ".join(side.datasets) or "?", side.dataset_fingerprint


def check_same_data(base: RunSide, cand: RunSide, subset: str, allow: bool) -> str | None:
    """None when both runs scored the same questions (or it cannot be told: an eval
    run, a fingerprint not recorded); else the warning line when ``allow``, else
    :class:`DifferentDataError`."""
    if base.run_id == cand.run_id or "eval" in (base.kind, cand.kind):
        return None
    a, b = _fingerprint(base, subset), _fingerprint(cand, subset)
    if a is None or b is None or a[1] == b[1]:
        return None
    detail = (
        f"runs {base.run_id} and {cand.run_id} were measured on different data "
        f"({base.run_id}: {a[0]}, dataset fingerprint {a[1]}; {cand.run_id}: {b[0]}, "
        f"dataset fingerprint {b[1]}): the same query id may be a different question"
    )
    if not allow:
        raise DifferentDataError(detail)
    return f"{detail}; paired by id anyway (--allow-different-data)"

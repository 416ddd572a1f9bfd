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
on it. Two runs over different question *sets* whose shared ids name the very
same questions (one run with ``limit: 20``, the other over all rows) pair on
those: each run folder's ``queries.jsonl`` records a fingerprint per question,
and when every shared id has the same fingerprint in both, the comparison goes
on with a note. ``rbench eval`` runs are not checked: their fingerprint is that of the
predictions file, which differs between any two prediction files of the same
questions — the very thing such a comparison is for.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.compare.comparison import RunSide
from retrieval_bench.store.records import RunRecord
from retrieval_bench.store.run_folder import ResultsFileError, read_queries
from retrieval_bench.store.stored_config import StoredConfig

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
    stored = StoredConfig.of(run.config)
    names = stored.dataset_names
    if stored.is_eval and stored.predictions:
        names = [stored.predictions]
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
        kind=stored.kind,
    )


def _fingerprint(side: RunSide, subset: str) -> tuple[str, str] | None:
    """(what, fingerprint) the check compares for ``subset``; None when unknown."""
    key, sep, name = subset.partition("=")
    if sep and key == "dataset" and name in side.dataset_fingerprints:
        return name, side.dataset_fingerprints[name][:16]
    if side.dataset_fingerprint is None:
        return None
    return ", ".join(side.datasets) or "?", side.dataset_fingerprint


def question_fingerprints(run_folder: Path) -> dict[str, str] | None:
    """Query id → question fingerprint from a run folder's ``queries.jsonl``; None
    when the file is absent or cannot be read (:func:`read_queries`: then which
    questions the run scored cannot be told), a line lacks the fingerprint (runs
    made before it was recorded), or one id names two different questions."""
    out: dict[str, str] = {}
    try:
        rows = read_queries(run_folder)
    except ResultsFileError:
        return None
    for row in rows:
        qid, fp = str(row["query_id"]), row.get("question_fingerprint")
        if not isinstance(fp, str) or out.setdefault(qid, fp) != fp:
            return None
    return out


def _same_shared_questions(base: RunSide, cand: RunSide, results: Path | None) -> int:
    """How many query ids both runs scored, when each names the same question in
    both (equal per-question fingerprints); 0 when that cannot be shown."""
    if results is None:
        return 0
    a = question_fingerprints(results / base.run_id)
    b = question_fingerprints(results / cand.run_id)
    if not a or not b:
        return 0
    shared = a.keys() & b.keys()
    return len(shared) if shared and all(a[q] == b[q] for q in shared) else 0


def check_same_data(
    base: RunSide, cand: RunSide, subset: str, allow: bool, results: Path | None = None
) -> str | None:
    """None when both runs scored the same questions (or it cannot be told: an eval
    run, a fingerprint not recorded); a note when their question sets differ but
    every shared id is the same question in both (``results``: the folder holding
    the run folders); else the warning line when ``allow``, else
    :class:`DifferentDataError`."""
    if base.run_id == cand.run_id or "eval" in (base.kind, cand.kind):
        return None
    a, b = _fingerprint(base, subset), _fingerprint(cand, subset)
    if a is None or b is None or a[1] == b[1]:
        return None
    if shared := _same_shared_questions(base, cand, results):
        return (
            f"runs {base.run_id} and {cand.run_id} scored different question sets "
            f"({a[0]}, dataset fingerprint {a[1]}; {b[0]}, dataset fingerprint {b[1]}); "
            f"the {shared} query id(s) both have are the same questions in both "
            "(equal question fingerprints), so they are paired"
        )
    detail = (
        f"runs {base.run_id} and {cand.run_id} were measured on different data "
        f"({base.run_id}: {a[0]}, dataset fingerprint {a[1]}; {cand.run_id}: {b[0]}, "
        f"dataset fingerprint {b[1]}): the same query id may be a different question"
    )
    if not allow:
        raise DifferentDataError(detail)
    return f"{detail}; paired by id anyway (--allow-different-data)"

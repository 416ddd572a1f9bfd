"""How consistent is an LLM judge? Repeat each prompt, measure agreement
(docs/metrics.md#llm-as-judge).

:func:`consistency` asks the judge about every sample ``repeats`` times at a
temperature above zero (so that repeats *can* differ; ``ChatRequest.repeat``
gives each repeat its own cache key, so a cached run never replays one answer
N times) and reports, treating each repeat as a rater and each distinct score
as a rating category:

Per sample
    ``values`` (None = that repeat failed or had no score), ``mean`` and
    ``variance`` (population variance, ddof=0, of the present values: the
    spread of one sample's scores), ``mode`` (most frequent value; the smallest
    on ties), ``modal_agreement`` (share of present values equal to the mode),
    ``pairwise_agreement`` (share of pairs of repeats that agree,
    P_i = Σ_j n_ij (n_ij − 1) / (n_i (n_i − 1)) with n_ij repeats in category j
    and n_i present repeats) and ``unanimous`` (at least two present values,
    all equal).

Overall
    ``pairwise_agreement`` = P̄, the mean P_i: the chance that two repeats of
    the same sample agree. ``modal_agreement``: mean share of repeats that give
    a sample's usual answer. ``unanimous_share``: samples whose repeats all
    agree. ``mean_variance``: mean within-sample variance (0 for a perfectly
    repeatable judge; in squared score units). ``missing``: repeats that failed
    or gave no score. ``fleiss_kappa``: Fleiss (1971) κ = (P̄ − P̄e) / (1 − P̄e)
    with P̄e = Σ_j p_j² and p_j the share of all ratings in category j — the
    agreement beyond what the overall mix of ratings gives by chance: 1 =
    perfect, 0 = chance level, < 0 = worse than chance. A judge that always
    says "4" agrees perfectly but tells nothing apart: P̄e = 1 and κ is
    undefined (None). Only samples with at least two present values enter P̄,
    the unanimous share and κ; when every sample has all its repeats this is
    exactly Fleiss' statistic, otherwise the usual generalisation to unequal
    numbers of raters (per-sample P_i with its own n_i, p_j over all ratings).

Agreement counts exact equality of extracted scores, so it suits discrete
extractors (``scale_1_5``, ``yes_no``); for ``float_0_1`` read the variance.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.metrics.answer.judge import LLMJudge
from retrieval_bench.text_table import aligned

__all__ = ["ConsistencyReport", "SampleConsistency", "consistency", "fleiss_kappa"]

_SHOWN_ERRORS = 10
"""How many failed repeats :meth:`ConsistencyReport.format` lists."""


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ of a subjects × categories table of rating counts (Fleiss 1971).

    Rows may have different totals (the generalisation in the module docstring);
    rows with fewer than two ratings are ignored. None when undefined: no row
    with two ratings, or every rating in one category (P̄e = 1).
    """
    rows = [[int(c) for c in row] for row in counts if sum(row) >= 2]
    if any(c < 0 for row in rows for c in row):
        raise ValueError("fleiss_kappa: counts must be non-negative")
    if not rows:
        return None
    total = sum(sum(row) for row in rows)
    width = max(len(row) for row in rows)
    p = [sum(row[j] for row in rows if j < len(row)) / total for j in range(width)]
    p_bar = math.fsum(_pairwise(row) for row in rows) / len(rows)
    p_e = math.fsum(pj * pj for pj in p)
    if math.isclose(p_e, 1.0):
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def _pairwise(row: Sequence[int]) -> float:
    n = sum(row)
    return sum(c * (c - 1) for c in row) / (n * (n - 1))


@dataclass(frozen=True)
class SampleConsistency:
    """One sample's repeats; see the module docstring for each number."""

    id: str
    values: tuple[float | None, ...]
    mean: float | None
    variance: float | None
    mode: float | None
    modal_agreement: float | None
    pairwise_agreement: float | None
    unanimous: bool
    missing: int
    errors: tuple[str, ...] = ()
    """The error of each missing repeat."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "values": list(self.values),
            "mean": self.mean,
            "variance": self.variance,
            "mode": self.mode,
            "modal_agreement": self.modal_agreement,
            "pairwise_agreement": self.pairwise_agreement,
            "unanimous": self.unanimous,
            "missing": self.missing,
            "errors": list(self.errors),
        }


def _summarise(sample_id: str, values: list[float | None], errors: list[str]) -> SampleConsistency:
    present = [v for v in values if v is not None]
    n = len(present)
    mean = variance = mode = modal = pairwise = None
    if n:
        mean = math.fsum(present) / n
        variance = math.fsum((v - mean) ** 2 for v in present) / n
        counts = Counter(present)
        top = max(counts.values())
        mode = min(v for v, c in counts.items() if c == top)
        modal = top / n
        if n >= 2:
            pairwise = _pairwise(list(counts.values()))
    return SampleConsistency(
        id=sample_id,
        values=tuple(values),
        mean=mean,
        variance=variance,
        mode=mode,
        modal_agreement=modal,
        pairwise_agreement=pairwise,
        unanimous=n >= 2 and len(set(present)) == 1,
        missing=len(values) - n,
        errors=tuple(errors),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


@dataclass(frozen=True)
class ConsistencyReport:
    """Agreement of a judge with itself over repeated calls (see the module docstring)."""

    judge: str
    repeats: int
    temperature: float
    samples: tuple[SampleConsistency, ...]
    categories: tuple[float, ...]
    """The distinct scores seen, ascending (the rating categories of κ)."""
    pairwise_agreement: float | None
    modal_agreement: float | None
    unanimous_share: float | None
    mean_variance: float | None
    missing: int
    fleiss_kappa: float | None

    @classmethod
    def build(
        cls,
        judge: str,
        repeats: int,
        temperature: float,
        samples: Sequence[SampleConsistency],
    ) -> ConsistencyReport:
        categories = tuple(sorted({v for s in samples for v in s.values if v is not None}))
        rated = [s for s in samples if s.pairwise_agreement is not None]
        table = [[sum(1 for v in s.values if v == c) for c in categories] for s in rated]
        return cls(
            judge=judge,
            repeats=repeats,
            temperature=temperature,
            samples=tuple(samples),
            categories=categories,
            pairwise_agreement=_mean([s.pairwise_agreement for s in rated]),
            modal_agreement=_mean([s.modal_agreement for s in samples]),
            unanimous_share=(sum(s.unanimous for s in rated) / len(rated)) if rated else None,
            mean_variance=_mean([s.variance for s in samples]),
            missing=sum(s.missing for s in samples),
            fleiss_kappa=fleiss_kappa(table),
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "judge": self.judge,
            "repeats": self.repeats,
            "temperature": self.temperature,
            "n_samples": len(self.samples),
            "categories": list(self.categories),
            "pairwise_agreement": self.pairwise_agreement,
            "modal_agreement": self.modal_agreement,
            "unanimous_share": self.unanimous_share,
            "mean_variance": self.mean_variance,
            "missing": self.missing,
            "fleiss_kappa": self.fleiss_kappa,
            "samples": [s.as_dict() for s in self.samples],
        }

    def format(self) -> str:
        """An aligned text table (one row per sample, then the overall numbers)."""
        header = ["sample", "values", "mean", "variance", "modal", "pairwise", "unanimous"]
        rows = [
            [
                s.id,
                " ".join("-" if v is None else f"{v:g}" for v in s.values),
                _num(s.mean),
                _num(s.variance, 4),
                _num(s.modal_agreement, 2),
                _num(s.pairwise_agreement, 2),
                "yes" if s.unanimous else "no",
            ]
            for s in self.samples
        ]
        n = len(self.samples)
        total = n * self.repeats
        unanimous = sum(s.unanimous for s in self.samples)
        title = (
            f"judge consistency: {self.judge}, {n} samples x {self.repeats} repeats, "
            f"temperature {self.temperature:g}"
        )
        out = [
            aligned(header, rows, title, left={0, 1}),
            "",
            f"pairwise agreement  {_num(self.pairwise_agreement)}",
            f"modal agreement     {_num(self.modal_agreement)}",
            f"unanimous           {unanimous}/{n} ({_num(self.unanimous_share)})",
            f"mean variance       {_num(self.mean_variance, 4)}",
            f"missing             {self.missing}/{total}",
            f"Fleiss' kappa       {_num(self.fleiss_kappa)} "
            f"({len(self.categories)} categories: {' '.join(f'{c:g}' for c in self.categories)})",
        ]
        failed = [
            f"  {s.id} repeat {r + 1}: {error}"
            for s in self.samples
            for r, error in zip(
                (r for r, v in enumerate(s.values) if v is None), s.errors, strict=False
            )
        ]
        if failed:
            out += ["", "missing repeats:", *failed[:_SHOWN_ERRORS]]
            if len(failed) > _SHOWN_ERRORS:
                out.append(f"  ... and {len(failed) - _SHOWN_ERRORS} more")
        return "\n".join(out)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def consistency(
    judge: LLMJudge,
    samples: Sequence[Sample],
    repeats: int = 5,
    temperature: float = 0.7,
) -> ConsistencyReport:
    """Ask ``judge`` about each sample ``repeats`` times (one ``chat_many`` for all)
    at ``temperature`` and report the agreement; failed repeats count as missing."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise ValueError(f"consistency: repeats must be an integer >= 2, got {repeats!r}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"consistency: temperature must be >= 0, got {temperature!r}")
    if not samples:
        raise ValueError("consistency: no samples to judge; pass at least one Sample")
    requests = [
        judge.request(s, temperature=temperature, repeat=r) for s in samples for r in range(repeats)
    ]
    replies = judge.llm.chat_many(requests)
    if len(replies) != len(requests):
        raise ValueError(
            f"consistency: the LLM returned {len(replies)} replies for {len(requests)} requests"
        )
    scores = [judge.verdict(r) for r in replies]
    summaries = []
    for i, sample in enumerate(samples):
        chunk = scores[i * repeats : (i + 1) * repeats]
        errors = [s.error or "missing" for s in chunk if s.value is None]
        summaries.append(_summarise(sample.id or f"#{i + 1}", [s.value for s in chunk], errors))
    return ConsistencyReport.build(judge.name, repeats, float(temperature), summaries)

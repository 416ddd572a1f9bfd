"""ClaimsFC: claim-based factual correctness of an answer a against the expected answer a0
(docs/metrics.md#factuality).

The recipe: split a into claims c1..ck; decide for each ci whether a0
entails it (→ 1), contradicts it (→ 0) or neither (→ f, a fixed value in
[0, 1], option ``neutral_value``); the mean is the score. "Do it the other
way round": split a0 into claims and check them against a. F1 combines both.

Naming of the two directions
----------------------------
The a-against-a0 mean is sometimes called "more or less recall" and the
swapped one "precision". This module uses the usual definitions instead (as claim-level
factual-correctness metrics in the literature do):

* **precision** = mean over the *answer's* claims checked against a0 — how
  much of what the answer says is backed by the expected answer (the
  classic ClaimsFC number, the one the rounding below was made for);
* **recall** = mean over the *reference's* claims checked against a —
  how much of the expected answer the answer covers;
* **F1** = 2PR / (P + R) (0 when P + R = 0) — the same under either naming.

``report`` picks the value (``"f1"`` default, ``"precision"``, ``"recall"``);
``details`` carries every computed direction. ``report="precision"`` never
extracts or checks the reference's claims (half the calls).

Rounding: in production use a score above 0.4 is rounded up to 1
(heuristically, such answers proved right). ``round_above=0.4`` does that to
the reported value (strictly above); ``details`` keep the unrounded numbers.

Calls: at most three ``chat_many`` rounds per batch — informationless checks,
claim extraction (answers and references together), entailment (two
requests per claim, both directions together).

Degenerate cases (each tested)
------------------------------
* no reference, or a blank one → missing ("no reference answer"): there is
  nothing to compare with; no call is made;
* a blank answer → 0.0, reason "empty answer: no claims" (under every
  ``report``), no call;
* ``informationless`` (default ``"zero"``): each non-blank answer is first
  checked by :class:`Informationless`; an informationless answer scores 0.0
  (``"zero"``), is missing (``"missing"``), or is scored like any other
  (``"ignore"``, no check). An unreadable check (no YES/NO) is no verdict: the
  answer is scored like any other (a pre-filter must not drop or zero answers it
  cannot judge); a failed check call makes the sample missing;
* the answer yields no claims → 0.0, reason "no claims in the answer";
* the reference yields no claims (only when recall is needed) → missing
  ("the reference answer yielded no claims"): recall is undefined;
* an unreadable entailment verdict → missing with both raw replies, unless
  ``unknown_as_neutral=True`` (then NEUTRAL, counted in ``details["unknown"]``);
* a failed LLM call anywhere in a sample → that sample is missing; the rest
  of the batch goes on.

Only the first reference is used when a sample has several.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import StrictFloat, StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.factuality.claims import (
    DEFAULT_MAX_CLAIMS,
    ClaimExtractor,
    Claims,
)
from retrieval_bench.metrics.answer.factuality.common import (
    check_temperature,
    check_unit,
    require_llm,
    shorten,
)
from retrieval_bench.metrics.answer.factuality.entailment import (
    Entailment,
    EntailmentAnalyzer,
    Relation,
)
from retrieval_bench.metrics.answer.factuality.informationless import (
    Informationless,
    InformationlessVerdict,
)

__all__ = ["INFORMATIONLESS_MODES", "REPORTS", "ClaimsFC", "f1_of"]

REPORTS = ("f1", "precision", "recall")
INFORMATIONLESS_MODES = ("zero", "missing", "ignore")
Report = Literal["f1", "precision", "recall"]
InformationlessMode = Literal["zero", "missing", "ignore"]


def f1_of(precision: float, recall: float) -> float:
    """Harmonic mean; 0 when both are 0."""
    total = precision + recall
    return 0.0 if total == 0 else 2 * precision * recall / total


@dataclass
class _Direction:
    """Claims of one text checked against the other text."""

    claims: tuple[str, ...]
    verdicts: list[Entailment]
    value: float | None = None
    counts: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    raw: str | None = None


class _Failed(Exception):
    def __init__(self, error: str, raw: str | None = None) -> None:
        super().__init__(error)
        self.error, self.raw = error, raw


class ClaimsFC(MetricBase):
    """Claim-level precision / recall / F1 of an answer against the expected answer.

    Parameters (``Params``): ``report`` (``"f1"``, ``"precision"``, ``"recall"``);
    ``neutral_value`` f for a NEUTRAL claim (0.0); ``round_above`` (None, or a
    threshold in [0, 1]: a reported value above it becomes 1.0); ``informationless``
    (``"zero"``, ``"missing"``, ``"ignore"``); ``unknown_as_neutral`` (False);
    ``max_claims`` per text (20); ``claim_max_tokens`` (256) and
    ``verdict_max_tokens`` (4) per reply; ``temperature`` (0.0). Keywords: ``llm``
    (injected by the metric factory) and ``name``.
    """

    description = "claim-level factual precision/recall/F1 of the answer vs the reference"
    needs_llm = True

    class Params(StageParams):
        report: str = "f1"
        neutral_value: StrictFloat = 0.0
        round_above: StrictFloat | None = None
        informationless: str = "zero"
        unknown_as_neutral: bool = False
        max_claims: StrictInt = DEFAULT_MAX_CLAIMS
        claim_max_tokens: StrictInt = 256
        verdict_max_tokens: StrictInt = 4
        temperature: StrictFloat = 0.0

    params: ClaimsFC.Params

    def __init__(
        self,
        params: ClaimsFC.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str = "claims_fc",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = name
        llm = require_llm(llm, name)
        report, informationless = p.report, p.informationless
        if report not in REPORTS:
            raise ConfigError(f"{name}: report must be one of {', '.join(REPORTS)}, got {report!r}")
        if informationless not in INFORMATIONLESS_MODES:
            raise ConfigError(
                f"{name}: informationless must be one of {', '.join(INFORMATIONLESS_MODES)}, "
                f"got {informationless!r}"
            )
        self.report = cast("Report", report)
        self.neutral_value = check_unit(p.neutral_value, "neutral_value", name)
        self.round_above = (
            None if p.round_above is None else check_unit(p.round_above, "round_above", name)
        )
        self.informationless = cast("InformationlessMode", informationless)
        self.unknown_as_neutral = p.unknown_as_neutral
        temperature = check_temperature(p.temperature, name)
        self.extractor = ClaimExtractor(
            llm, max_claims=p.max_claims, max_tokens=p.claim_max_tokens, temperature=temperature
        )
        self.analyzer = EntailmentAnalyzer(
            llm, max_tokens=p.verdict_max_tokens, temperature=temperature
        )
        self.detector = Informationless(
            llm, max_tokens=p.verdict_max_tokens, temperature=temperature
        )
        self.llm = llm

    @property
    def needs_recall(self) -> bool:
        return self.report != "precision"

    # ------------------------------------------------------------------ batch
    def score(self, sample: Sample) -> Score:
        return self.score_samples([sample])[0]

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        out: list[Score | None] = [self._precheck(s) for s in samples]
        todo = [i for i, s in enumerate(out) if s is None]

        if self.informationless != "ignore" and todo:
            found = self.detector.detect_many([samples[i].prediction for i in todo])
            for i, verdict in zip(todo, found, strict=True):
                out[i] = self._informationless_score(verdict)
            todo = [i for i in todo if out[i] is None]

        texts: list[str] = []
        for i in todo:
            texts.append(samples[i].prediction)
            if self.needs_recall:
                texts.append(samples[i].reference)
        extracted = iter(self.extractor.extract_many(texts))
        claims: dict[int, tuple[Claims, Claims | None]] = {}
        for i in todo:
            answer = next(extracted)
            reference = next(extracted) if self.needs_recall else None
            out[i] = self._claims_problem(answer, reference)
            if out[i] is None:
                claims[i] = (answer, reference)
        todo = list(claims)

        pairs: list[tuple[str, str]] = []
        for i in todo:
            answer, reference = claims[i]
            pairs += [(samples[i].reference, c) for c in answer.claims]
            if reference is not None:
                pairs += [(samples[i].prediction, c) for c in reference.claims]
        verdicts = iter(self.analyzer.analyze_many(pairs))
        for i in todo:
            answer, reference = claims[i]
            precision = _Direction(answer.claims, [next(verdicts) for _ in answer.claims])
            recall = None
            if reference is not None:
                recall = _Direction(reference.claims, [next(verdicts) for _ in reference.claims])
            out[i] = self._verdict(precision, recall)
        return [s if s is not None else Score.missing("internal: sample not scored") for s in out]

    # ------------------------------------------------------------------ stages
    def _precheck(self, sample: Sample) -> Score | None:
        if not sample.reference.strip():
            return Score.missing(
                f"{self.name}: no reference answer; claims_fc compares the answer with the "
                "expected answer, give the sample a reference"
            )
        if not sample.prediction.strip():
            return Score(0.0, reason="empty answer: no claims", details=self._zero_details())
        return None

    def _zero_details(self, **extra: float) -> dict[str, float | None]:
        recall = 0.0 if self.needs_recall else None
        f1 = 0.0 if self.report == "f1" else None
        return {"precision": 0.0, "recall": recall, "f1": f1, "answer_claims": 0.0, **extra}

    def _informationless_score(self, verdict: InformationlessVerdict) -> Score | None:
        if verdict.error is not None:
            return Score.missing(f"informationless check: {verdict.error}", raw=verdict.raw)
        if not verdict.informationless:  # None: an unreadable check is no verdict
            return None
        if self.informationless == "missing":
            return Score.missing(
                "informationless answer (only pleasantries or questions back)", raw=verdict.raw
            )
        return Score(
            0.0,
            reason="informationless answer (only pleasantries or questions back)",
            raw=verdict.raw,
            details=self._zero_details(informationless=1.0),
        )

    def _claims_problem(self, answer: Claims, reference: Claims | None) -> Score | None:
        for what, claims in (("answer", answer), ("reference answer", reference)):
            if claims is not None and claims.error is not None:
                return Score.missing(f"claims of the {what}: {claims.error}", raw=claims.raw)
        if not answer.claims:
            return Score(
                0.0,
                reason="no claims in the answer",
                raw=answer.raw,
                details=self._zero_details(),
            )
        if reference is not None and not reference.claims:
            return Score.missing(
                "the reference answer yielded no claims; recall is undefined "
                "(use report='precision' or check the reference)",
                raw=reference.raw,
            )
        return None

    def _claim_value(self, verdict: Entailment, claim: str) -> float:
        if verdict.error is not None:
            raise _Failed(
                f"entailment of claim {shorten(claim, 60)!r}: {verdict.error}", verdict.raw
            )
        relation = verdict.relation
        if relation is None:
            if not self.unknown_as_neutral:
                raise _Failed(
                    f"entailment of claim {shorten(claim, 60)!r}: no YES/NO in the replies",
                    verdict.raw,
                )
            relation = Relation.NEUTRAL
        if relation is Relation.ENTAIL:
            return 1.0
        if relation is Relation.CONTRADICT:
            return 0.0
        return self.neutral_value

    def _direction(self, d: _Direction) -> None:
        values = []
        for claim, v in zip(d.claims, d.verdicts, strict=True):
            values.append(self._claim_value(v, claim))
            d.counts[v.relation.value if v.relation is not None else "unknown"] += 1
            d.counts["conflicting"] += v.conflicting
        d.value = sum(values) / len(values)

    def _verdict(self, precision: _Direction, recall: _Direction | None) -> Score:
        try:
            self._direction(precision)
            if recall is not None:
                self._direction(recall)
        except _Failed as exc:
            return Score.missing(exc.error, raw=exc.raw)
        assert precision.value is not None
        p = precision.value
        r = recall.value if recall is not None else None
        f1 = f1_of(p, r) if r is not None else None
        reported = {"precision": p, "recall": r, "f1": f1}[self.report]
        assert reported is not None
        value = reported
        if self.round_above is not None and reported > self.round_above:
            value = 1.0
        details: dict[str, float | None] = {"precision": p, "recall": r, "f1": f1}
        for prefix, d in (("answer", precision), ("reference", recall)):
            if d is None:
                continue
            details[f"{prefix}_claims"] = float(len(d.claims))
            for key in ("entail", "contradict", "neutral"):
                details[f"{prefix}_{key}"] = float(d.counts[key])
        details["conflicting"] = float(
            precision.counts["conflicting"] + (recall.counts["conflicting"] if recall else 0)
        )
        details["unknown"] = float(
            precision.counts["unknown"] + (recall.counts["unknown"] if recall else 0)
        )
        return Score(
            value,
            reason=self._reason(precision, recall, value != reported),
            raw=_listing(precision, recall),
            details=details,
        )

    def _reason(self, precision: _Direction, recall: _Direction | None, rounded: bool) -> str:
        parts = [
            f"{precision.counts['entail']}/{len(precision.claims)} answer claims entailed "
            "by the reference"
        ]
        if recall is not None:
            parts.append(
                f"{recall.counts['entail']}/{len(recall.claims)} reference claims entailed "
                "by the answer"
            )
        text = "; ".join(parts)
        contradicted = [
            c
            for c, v in zip(precision.claims, precision.verdicts, strict=True)
            if v.relation is Relation.CONTRADICT
        ]
        if contradicted:
            text += "; contradicted: " + ", ".join(repr(shorten(c, 60)) for c in contradicted[:3])
        if rounded:
            text += f" (rounded up to 1: above {self.round_above})"
        return text


def _listing(precision: _Direction, recall: _Direction | None) -> str:
    """Per-claim verdicts, one per line (kept as ``Score.raw``)."""
    lines = []
    for title, d in (
        ("answer claims vs reference", precision),
        ("reference claims vs answer", recall),
    ):
        if d is None:
            continue
        lines.append(f"{title}:")
        for claim, v in zip(d.claims, d.verdicts, strict=True):
            label = v.relation.value if v.relation is not None else "unknown"
            lines.append(f"  [{label}{', conflicting' if v.conflicting else ''}] {claim}")
    return "\n".join(lines)

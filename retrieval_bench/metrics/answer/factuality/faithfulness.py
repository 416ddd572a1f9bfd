"""Faithfulness: the share of the answer's claims that the sources back
(docs/metrics.md#factuality).

Given an answer a and sources S (the retrieved chunks, ``Sample.contexts``):

1. split a into claims c1..ck (:class:`ClaimExtractor`);
2. for every claim and every source, decide the relation
   (:class:`EntailmentAnalyzer`: two YES/NO questions per pair);
3. a claim is *faithful* when at least one source ENTAILS it;
4. the score is the share of faithful claims.

Calls: two ``chat_many`` rounds per batch — extraction of every answer, then
every (source, claim) pair of every sample (2 × claims × sources requests;
identical pairs share calls). Mind the cost with many or long sources.

Degenerate cases (each tested)
------------------------------
* no sources (none, or only blank ones) → missing, error "no sources": the
  sample needs its retrieved contexts; no call is made. Blank sources among
  others are dropped;
* a blank answer, or one that yields no claims → 0.0, reason "no claims"
  (as in ``claims_fc``: an answer should not gain by saying nothing);
* a claim entailed by some source is faithful whatever the other sources'
  verdicts were (even unreadable ones or failed calls); a claim entailed by
  none with an unreadable verdict is *unknown* → the sample is missing with
  the raw replies, unless ``unknown_as_neutral=True`` (then not faithful,
  counted in ``details["unknown"]``); with a failed call → missing;
* claim extraction failed or replied blank → missing with the raw text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import StrictFloat, StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.factuality.claims import (
    DEFAULT_MAX_CLAIMS,
    ClaimExtractor,
    Claims,
)
from retrieval_bench.metrics.answer.factuality.common import (
    check_temperature,
    require_llm,
    shorten,
)
from retrieval_bench.metrics.answer.factuality.entailment import (
    Entailment,
    EntailmentAnalyzer,
    Relation,
)

__all__ = ["Faithfulness", "sources_of"]


def sources_of(sample: Sample) -> list[str]:
    """The sample's non-blank contexts."""
    return [c for c in sample.contexts if c.strip()]


class Faithfulness(MetricBase):
    """Share of the answer's claims entailed by at least one source.

    Parameters (``Params``): ``unknown_as_neutral`` (False); ``max_claims`` (20);
    ``claim_max_tokens`` (256); ``verdict_max_tokens`` (4); ``temperature`` (0.0).
    Keywords: ``llm`` (injected by the metric factory) and ``name``.
    """

    description = "share of the answer's claims entailed by at least one retrieved source"
    needs_llm = True

    class Params(StageParams):
        unknown_as_neutral: bool = False
        max_claims: StrictInt = DEFAULT_MAX_CLAIMS
        claim_max_tokens: StrictInt = 256
        verdict_max_tokens: StrictInt = 4
        temperature: StrictFloat = 0.0

    params: Faithfulness.Params

    def __init__(
        self,
        params: Faithfulness.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str = "faithfulness",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = name
        llm = require_llm(llm, name)
        temperature = check_temperature(p.temperature, name)
        self.unknown_as_neutral = p.unknown_as_neutral
        self.llm = llm
        self.extractor = ClaimExtractor(
            llm, max_claims=p.max_claims, max_tokens=p.claim_max_tokens, temperature=temperature
        )
        self.analyzer = EntailmentAnalyzer(
            llm, max_tokens=p.verdict_max_tokens, temperature=temperature
        )

    def score(self, sample: Sample) -> Score:
        return self.score_samples([sample])[0]

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        out: list[Score | None] = [self._precheck(s) for s in samples]
        todo = [i for i, s in enumerate(out) if s is None]
        extracted = self.extractor.extract_many([samples[i].prediction for i in todo])
        claims: dict[int, Claims] = {}
        for i, c in zip(todo, extracted, strict=True):
            if c.error is not None:
                out[i] = Score.missing(f"claims of the answer: {c.error}", raw=c.raw)
            elif not c.claims:
                out[i] = Score(0.0, reason="no claims", raw=c.raw, details={"claims": 0.0})
            else:
                claims[i] = c
        pairs = [
            (source, claim)
            for i, c in claims.items()
            for claim in c.claims
            for source in sources_of(samples[i])
        ]
        verdicts = iter(self.analyzer.analyze_many(pairs))
        for i, c in claims.items():
            n_sources = len(sources_of(samples[i]))
            per_claim = [[next(verdicts) for _ in range(n_sources)] for _ in c.claims]
            out[i] = self._verdict(c.claims, per_claim, n_sources)
        return [s if s is not None else Score.missing("internal: sample not scored") for s in out]

    def _precheck(self, sample: Sample) -> Score | None:
        if not sources_of(sample):
            return Score.missing(
                f"{self.name}: no sources; faithfulness needs the sample's retrieved contexts"
            )
        if not sample.prediction.strip():
            return Score(0.0, reason="no claims (empty answer)", details={"claims": 0.0})
        return None

    def _verdict(
        self, claims: Sequence[str], per_claim: list[list[Entailment]], n_sources: int
    ) -> Score:
        faithful = contradicted = unknown = conflicting = 0
        unsupported: list[str] = []
        lines = []
        for claim, verdicts in zip(claims, per_claim, strict=True):
            conflicting += sum(v.conflicting for v in verdicts)
            if any(v.relation is Relation.ENTAIL for v in verdicts):
                faithful += 1
                lines.append(f"  [faithful] {claim}")
                continue
            failed = next((v for v in verdicts if v.error is not None), None)
            if failed is not None:
                return Score.missing(
                    f"entailment of claim {shorten(claim, 60)!r}: {failed.error}", raw=failed.raw
                )
            unread = next((v for v in verdicts if v.relation is None), None)
            if unread is not None:
                if not self.unknown_as_neutral:
                    return Score.missing(
                        f"entailment of claim {shorten(claim, 60)!r}: no YES/NO in the replies",
                        raw=unread.raw,
                    )
                unknown += 1
            if any(v.relation is Relation.CONTRADICT for v in verdicts):
                contradicted += 1
            unsupported.append(claim)
            lines.append(f"  [unsupported] {claim}")
        reason = f"{faithful}/{len(claims)} claims entailed by a source"
        if unsupported:
            reason += "; unsupported: " + ", ".join(repr(shorten(c, 60)) for c in unsupported[:3])
        details: dict[str, float | None] = {
            "claims": float(len(claims)),
            "faithful": float(faithful),
            "contradicted": float(contradicted),
            "unknown": float(unknown),
            "conflicting": float(conflicting),
            "sources": float(n_sources),
        }
        return Score(
            faithful / len(claims),
            reason=reason,
            raw="answer claims vs sources:\n" + "\n".join(lines),
            details=details,
        )

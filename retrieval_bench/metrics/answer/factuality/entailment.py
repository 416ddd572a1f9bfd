"""Entailment analysis: does text t entail, contradict, or say nothing about claim s?
(docs/metrics.md#factuality).

Two questions are asked in parallel — "does t entail s?" and
"does t contradict s?" — each answered YES or NO (the first whole word YES or
NO of the reply, as the judge's ``yes_no`` extractor reads it), and the two
answers are aggregated:

====================  =====================  ============================
entails?              contradicts?           relation
====================  =====================  ============================
YES                   NO                     ENTAIL
NO                    YES                    CONTRADICT
NO                    NO                     NEUTRAL
YES                   YES                    NEUTRAL (``conflicting``)
no YES/NO in reply    (either)               unknown (``relation`` None)
(either)              no YES/NO in reply     unknown (``relation`` None)
call failed           (either)               unknown, with ``error`` set
====================  =====================  ============================

Both YES means the model contradicts itself; the pair counts as NEUTRAL and
:attr:`Entailment.conflicting` records it. An unknown pair keeps both raw
replies; metrics turn it into a missing value with the raw text, or into
NEUTRAL when asked to (``unknown_as_neutral=True``) — but never a failed
call: a failure always makes the sample missing.

:class:`EntailmentAnalyzer` sends **two requests per pair** for a whole batch
of pairs through one ``llm.chat_many``. Identical pairs share their calls. A
blank text states nothing, so every claim is NEUTRAL about it (no call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from retrieval_bench.llm.base import LLM, Completion, LLMError
from retrieval_bench.metrics.answer.factuality.common import (
    YES_NO_LOGPROBS,
    Prompt,
    call_all,
    check_max_tokens,
    check_temperature,
    reply_text,
    reply_yes_no,
)

__all__ = ["Entailment", "EntailmentAnalyzer", "Relation", "combine"]


class Relation(StrEnum):
    """How a claim stands to a text."""

    ENTAIL = "entail"
    CONTRADICT = "contradict"
    NEUTRAL = "neutral"


def combine(entails: bool | None, contradicts: bool | None) -> Relation | None:
    """The aggregation table of the module docstring (None = unknown)."""
    if entails is None or contradicts is None:
        return None
    if entails and not contradicts:
        return Relation.ENTAIL
    if contradicts and not entails:
        return Relation.CONTRADICT
    return Relation.NEUTRAL


@dataclass(frozen=True)
class Entailment:
    """The verdict on one (text, claim) pair."""

    relation: Relation | None
    """None when unknown: a reply without YES/NO, or a failed call (then ``error``)."""
    entails: bool | None = None
    contradicts: bool | None = None
    raw_entails: str | None = None
    raw_contradicts: str | None = None
    error: str | None = None
    """Set when a call failed."""

    @property
    def conflicting(self) -> bool:
        """The model said YES to both questions (counted as NEUTRAL)."""
        return bool(self.entails) and bool(self.contradicts)

    @property
    def unknown(self) -> bool:
        return self.relation is None

    @property
    def raw(self) -> str:
        """Both replies, labelled, for a missing value's ``raw``."""
        return f"entails? {self.raw_entails!r}; contradicts? {self.raw_contradicts!r}"


class EntailmentAnalyzer:
    """Entail / contradict / neutral for many (text, claim) pairs in one ``chat_many``.

    Parameters: ``llm``; ``max_tokens`` of each YES/NO reply (4);
    ``temperature`` (0.0); ``entails_prompt`` / ``contradicts_prompt``
    (built-in names or files whose ``[user]`` uses ``{text}`` and ``{claim}``).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_tokens: int = 4,
        temperature: float = 0.0,
        entails_prompt: str | Path = "entails",
        contradicts_prompt: str | Path = "contradicts",
    ) -> None:
        owner = "entailment analyzer"
        self.llm = llm
        self.max_tokens = check_max_tokens(max_tokens, "max_tokens", owner)
        self.temperature = check_temperature(temperature, owner)
        self.entails_prompt = Prompt.load(entails_prompt, ("text", "claim"), owner)
        self.contradicts_prompt = Prompt.load(contradicts_prompt, ("text", "claim"), owner)

    def analyze_many(self, pairs: Sequence[tuple[str, str]]) -> list[Entailment]:
        """The relation of each ``(text, claim)`` pair; two calls per distinct pair with
        a non-blank text, all in one ``chat_many``."""
        for pair in pairs:
            if not (
                isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            ):
                raise TypeError(
                    f"entailment analyzer: pairs must be (text, claim) strings, got {pair!r}"
                )
            if not pair[1].strip():
                raise ValueError("entailment analyzer: a claim is blank; pass non-empty claims")
        unique = list(dict.fromkeys(p for p in pairs if p[0].strip()))
        requests = []
        for text, claim in unique:
            for prompt in (self.entails_prompt, self.contradicts_prompt):
                requests.append(
                    prompt.request(
                        temperature=self.temperature,
                        max_tokens=self.max_tokens,
                        top_logprobs=YES_NO_LOGPROBS,
                        text=text,
                        claim=claim,
                    )
                )
        replies = call_all(self.llm, requests, "entailment analyzer")
        verdicts = {
            pair: self._read(replies[2 * k], replies[2 * k + 1]) for k, pair in enumerate(unique)
        }
        neutral = Entailment(Relation.NEUTRAL, entails=False, contradicts=False)
        return [verdicts.get(p, neutral) for p in pairs]

    def analyze(self, text: str, claim: str) -> Entailment:
        """One pair (two calls)."""
        return self.analyze_many([(text, claim)])[0]

    @staticmethod
    def _read(
        entails_reply: Completion | LLMError, contradicts_reply: Completion | LLMError
    ) -> Entailment:
        raw_e, err_e = reply_text(entails_reply)
        raw_c, err_c = reply_text(contradicts_reply)
        entails = reply_yes_no(entails_reply)
        contradicts = reply_yes_no(contradicts_reply)
        return Entailment(
            relation=combine(entails, contradicts),
            entails=entails,
            contradicts=contradicts,
            raw_entails=raw_e,
            raw_contradicts=raw_c,
            error=err_e or err_c,
        )

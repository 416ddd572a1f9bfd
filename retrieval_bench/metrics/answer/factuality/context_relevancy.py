"""ContextRelevancy: the share of sources the answer needed
(docs/metrics.md#factuality).

Given a question q, an answer a and sources S (``Sample.contexts``), the
model is asked for every source whether it was necessary (or rather useful)
for writing a — one YES/NO call per source; the score is
``#YES / #sources``. All calls of a batch go through one ``chat_many``.

Degenerate cases (each tested)
------------------------------
* no sources (none, or only blank ones) → missing, error "no sources"; no call;
* a blank source among others counts as not useful, without a call;
* a blank answer → 0.0 (an empty answer used no source), no call;
* a missing question is sent as "";
* a reply without YES/NO, or a failed call, for any source → the sample is
  missing with the raw reply; the rest of the batch goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import StrictFloat, StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.llm.base import LLM, Completion, LLMError
from retrieval_bench.metrics.answer.factuality.common import (
    YES_NO_LOGPROBS,
    Prompt,
    call_all,
    check_max_tokens,
    check_temperature,
    reply_text,
    reply_yes_no,
    require_llm,
    shorten,
)

__all__ = ["ContextRelevancy"]


class ContextRelevancy(MetricBase):
    """Share of the retrieved sources the model judges necessary/useful for the answer.

    Parameters (``Params``): ``max_tokens`` (4); ``temperature`` (0.0); ``prompt``
    (a built-in name or a file whose ``[user]`` uses ``{question}``,
    ``{prediction}``, ``{source}``). Keywords: ``llm`` (injected by the metric
    factory) and ``name``.
    """

    description = "share of retrieved sources judged necessary or useful for the answer"
    needs_llm = True

    class Params(StageParams):
        max_tokens: StrictInt = 4
        temperature: StrictFloat = 0.0
        prompt: str | Path = "context_relevancy"

    params: ContextRelevancy.Params

    def __init__(
        self,
        params: ContextRelevancy.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str = "context_relevancy",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = name
        self.llm = require_llm(llm, name)
        self.max_tokens = check_max_tokens(p.max_tokens, "max_tokens", name)
        self.temperature = check_temperature(p.temperature, name)
        self.prompt = Prompt.load(p.prompt, ("question", "prediction", "source"), name)

    def score(self, sample: Sample) -> Score:
        return self.score_samples([sample])[0]

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        out: list[Score | None] = [self._precheck(s) for s in samples]
        todo = [i for i, s in enumerate(out) if s is None]
        jobs = [(i, src) for i in todo for src in samples[i].contexts if src.strip()]
        requests = [
            self.prompt.request(
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                top_logprobs=YES_NO_LOGPROBS,
                question=samples[i].question or "",
                prediction=samples[i].prediction,
                source=src,
            )
            for i, src in jobs
        ]
        replies = iter(call_all(self.llm, requests, self.name))
        for i in todo:
            sources = samples[i].contexts
            asked = [next(replies) for src in sources if src.strip()]
            out[i] = self._verdict(sources, asked)
        return [s if s is not None else Score.missing("internal: sample not scored") for s in out]

    def _precheck(self, sample: Sample) -> Score | None:
        if not any(c.strip() for c in sample.contexts):
            return Score.missing(
                f"{self.name}: no sources; context_relevancy needs the sample's retrieved contexts"
            )
        if not sample.prediction.strip():
            n = float(len(sample.contexts))
            return Score(
                0.0, reason="empty answer: used no source", details={"sources": n, "relevant": 0.0}
            )
        return None

    def _verdict(self, sources: Sequence[str], replies: list[Completion | LLMError]) -> Score:
        relevant = 0
        marks = []
        raws = []
        for k, reply in enumerate(replies, start=1):
            text, error = reply_text(reply)
            if text is None:
                return Score.missing(f"source {k}: {error}")
            raws.append(f"source {k}: {text}")
            useful = reply_yes_no(reply)
            if useful is None:
                return Score.missing(
                    f"source {k}: no YES/NO in the reply {shorten(text)!r}", raw=text
                )
            relevant += useful
            marks.append("Y" if useful else "N")
        blank = len(sources) - len(replies)
        reason = f"{relevant}/{len(sources)} sources judged useful ({''.join(marks)})"
        if blank:
            reason += f"; {blank} blank source(s) counted as not useful"
        return Score(
            relevant / len(sources),
            reason=reason,
            raw="\n".join(raws),
            details={"sources": float(len(sources)), "relevant": float(relevant)},
        )

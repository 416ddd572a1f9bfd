"""RubricsFC: the relation of an answer a to the expected answer a0, in one LLM call
(docs/metrics.md#factuality).

The model picks which of five relations holds:

====================  ==========================================================
label                 meaning
====================  ==========================================================
``equivalent``        a and a0 state exactly the same
``implied_subset``    a is true given a0, but a0 says more
``implied_superset``  a says more than a0 and does not contradict it
``contradiction``     a contradicts a0
``independent``       a and a0 talk past each other
====================  ==========================================================

Each label maps to a score (option ``scores``; any subset of the labels may
be overridden, values in [0, 1]). The rubric itself fixes no numbers; the
defaults here are 1.0 / 0.5 / 0.75 / 0.0 / 0.0 in the order above: an
answer that is right but incomplete earns half, one that covers the expected
answer and adds unverified extras three quarters.

Reading the reply: the first label word, case-insensitive, whole words —
``equivalent``/``equivalence``, ``subset`` (with or without "implied"),
``superset``, ``contradiction``/``contradicts``/``contradictory``,
``independent``/``independence``; ``_``, ``-`` or a space may join
"implied" to its word. A reply with none is missing (raw text kept); the text
after the label becomes the reason.

``details`` hold a one-hot ``relation_<label>`` entry per label (so the mean
over a batch is the share of each relation). A blank answer scores 0.0 with
no call; a sample without a (non-blank) reference is missing; a failed call
is missing and the batch goes on. All calls of a batch go through one
``chat_many``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import StrictFloat, StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, Completion, LLMError
from retrieval_bench.metrics.answer.factuality.common import (
    Prompt,
    call_all,
    check_max_tokens,
    check_temperature,
    check_unit,
    reply_text,
    require_llm,
    shorten,
)

__all__ = ["DEFAULT_RUBRIC_SCORES", "RUBRIC_LABELS", "RubricsFC", "parse_rubric_label"]

RUBRIC_LABELS = (
    "equivalent",
    "implied_subset",
    "implied_superset",
    "contradiction",
    "independent",
)
DEFAULT_RUBRIC_SCORES: Mapping[str, float] = {
    "equivalent": 1.0,
    "implied_subset": 0.5,
    "implied_superset": 0.75,
    "contradiction": 0.0,
    "independent": 0.0,
}
_LABEL_PATTERNS = {
    "equivalent": r"equivalen(?:t|ce)",
    "implied_subset": r"(?:implied[\s_-]*)?subset",
    "implied_superset": r"(?:implied[\s_-]*)?superset",
    "contradiction": r"contradict(?:ion|s|ory|ing)?",
    "independent": r"independen(?:t|ce)",
}
_LABEL = re.compile(
    "|".join(rf"(?P<{label}>(?<![^\W_]){p}(?![^\W_]))" for label, p in _LABEL_PATTERNS.items()),
    re.IGNORECASE,
)
_REASON_STRIP = " \t\r\n.,;:!-–—*)](\"'"


def parse_rubric_label(text: str) -> tuple[str, int] | None:
    """(label, end of the match) of the first label word in ``text``; None if none."""
    m = _LABEL.search(text)
    if m is None or m.lastgroup is None:
        return None
    return m.lastgroup, m.end()


class RubricsFC(MetricBase):
    """One-call relation of the answer to the expected answer, mapped to a score.

    Parameters (``Params``): ``scores`` (label → value in [0, 1], merged over
    :data:`DEFAULT_RUBRIC_SCORES`); ``max_tokens`` (32); ``temperature`` (0.0);
    ``prompt`` (a built-in name or a file whose ``[user]`` uses ``{question}``,
    ``{reference}``, ``{prediction}``). Keywords: ``llm`` (injected by the metric
    factory) and ``name``.
    """

    description = "rubric relation of the answer to the reference (equivalent ... contradiction)"
    needs_llm = True

    class Params(StageParams):
        scores: dict[str, StrictFloat] | None = None
        max_tokens: StrictInt = 32
        temperature: StrictFloat = 0.0
        prompt: str | Path = "rubrics"

    params: RubricsFC.Params

    def __init__(
        self,
        params: RubricsFC.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str = "rubrics_fc",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = name
        self.llm = require_llm(llm, name)
        merged = dict(DEFAULT_RUBRIC_SCORES)
        if p.scores is not None:
            unknown = sorted(set(p.scores) - set(RUBRIC_LABELS))
            if unknown:
                raise ConfigError(
                    f"{name}: unknown rubric label(s) {', '.join(map(repr, unknown))} in scores; "
                    f"use {', '.join(RUBRIC_LABELS)}"
                )
            for label, value in p.scores.items():
                merged[label] = check_unit(value, f"scores[{label!r}]", name)
        self.scores: Mapping[str, float] = merged
        self.max_tokens = check_max_tokens(p.max_tokens, "max_tokens", name)
        self.temperature = check_temperature(p.temperature, name)
        self.prompt = Prompt.load(p.prompt, ("question", "reference", "prediction"), name)

    def score(self, sample: Sample) -> Score:
        return self.score_samples([sample])[0]

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        out: list[Score | None] = [self._precheck(s) for s in samples]
        todo = [i for i, s in enumerate(out) if s is None]
        requests = [
            self.prompt.request(
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                question=samples[i].question or "",
                reference=samples[i].reference,
                prediction=samples[i].prediction,
            )
            for i in todo
        ]
        for i, reply in zip(todo, call_all(self.llm, requests, self.name), strict=True):
            out[i] = self.verdict(reply)
        return [s if s is not None else Score.missing("internal: sample not scored") for s in out]

    def _precheck(self, sample: Sample) -> Score | None:
        if not sample.reference.strip():
            return Score.missing(
                f"{self.name}: no reference answer; rubrics_fc compares the answer with the "
                "expected answer, give the sample a reference"
            )
        if not sample.prediction.strip():
            return Score(0.0, reason="empty answer")
        return None

    def verdict(self, reply: Completion | LLMError) -> Score:
        """One model reply (or failure) → a score."""
        text, error = reply_text(reply)
        if text is None:
            return Score.missing(error or "LLM call failed")
        found = parse_rubric_label(text)
        if found is None:
            return Score.missing(
                f"rubric answer names no relation ({', '.join(RUBRIC_LABELS)}): {shorten(text)!r}",
                raw=text,
            )
        label, end = found
        explanation = text[end:].strip(_REASON_STRIP)
        reason = f"relation: {label}" + (f" — {shorten(explanation, 160)}" if explanation else "")
        details: dict[str, float | None] = {
            f"relation_{x}": 1.0 if x == label else 0.0 for x in RUBRIC_LABELS
        }
        return Score(self.scores[label], reason=reason, raw=text, details=details)

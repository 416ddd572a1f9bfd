"""Informationless detection: is a text only pleasantries or questions back?
(docs/metrics.md#factuality).

Given a text t, decide whether it contains any information at all or only
formalities (greetings, thanks, apologies, asking the user back, "I can't
help with that"). One LLM call per text, answered YES (informationless) or
NO; :class:`Informationless` sends a whole batch through one ``chat_many``.

A blank text is informationless without a call. A reply without a YES/NO
word leaves the verdict unknown (``informationless`` None, raw text kept);
a failed call sets ``error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from retrieval_bench.llm.base import LLM
from retrieval_bench.llm.yes_no import parse_yes_no
from retrieval_bench.metrics.answer.factuality.common import (
    Prompt,
    call_all,
    check_max_tokens,
    check_temperature,
    reply_text,
)

__all__ = ["Informationless", "InformationlessVerdict"]


@dataclass(frozen=True)
class InformationlessVerdict:
    """Whether one text is informationless (None: unknown, see ``raw``/``error``)."""

    informationless: bool | None
    raw: str | None = None
    error: str | None = None


class Informationless:
    """Flags texts that carry no information, a batch at a time (one ``chat_many``).

    Parameters: ``llm``; ``max_tokens`` of each YES/NO reply (4);
    ``temperature`` (0.0); ``prompt`` (a built-in name or a file whose
    ``[user]`` uses ``{text}``; default the built-in ``informationless``).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_tokens: int = 4,
        temperature: float = 0.0,
        prompt: str | Path = "informationless",
    ) -> None:
        owner = "informationless detector"
        self.llm = llm
        self.max_tokens = check_max_tokens(max_tokens, "max_tokens", owner)
        self.temperature = check_temperature(temperature, owner)
        self.prompt = Prompt.load(prompt, ("text",), owner)

    def detect_many(self, texts: Sequence[str]) -> list[InformationlessVerdict]:
        """A verdict per text; one call per distinct non-blank text, in one ``chat_many``."""
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(
                    f"informationless detector: texts must be strings, got {type(t).__name__}"
                )
        unique = list(dict.fromkeys(t for t in texts if t.strip()))
        requests = [
            self.prompt.request(
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                text=t,
            )
            for t in unique
        ]
        replies = call_all(self.llm, requests, "informationless detector")
        verdicts = {}
        for t, reply in zip(unique, replies, strict=True):
            raw, error = reply_text(reply)
            # text only, no logprob fallback: an "informationless" verdict zeroes the
            # sample, so it must be an explicit YES (weak models lean to "Yes" tokens)
            value = None if raw is None else parse_yes_no(raw, anywhere=True)
            verdict = None if value is None else value == 1.0
            verdicts[t] = InformationlessVerdict(verdict, raw, error)
        blank = InformationlessVerdict(True)
        return [verdicts.get(t, blank) for t in texts]

    def detect(self, text: str) -> InformationlessVerdict:
        """One text (one call unless blank)."""
        return self.detect_many([text])[0]

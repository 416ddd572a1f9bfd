"""Plumbing shared by the factuality helpers and metrics (docs/metrics.md#factuality).

* prompt files: ``prompts/<name>.txt`` (or any file path) split into
  ``[system]`` and ``[user]`` sections, lines before the first section being
  comments — the convention of the reranker and judge prompts; placeholders
  use ``str.format`` syntax and are checked when a helper is built;
* :func:`call_all`: a list of requests through **one** ``llm.chat_many``
  (failures come back as :class:`LLMError` values, never raised);
* :func:`reply_yes_no`: the first whole word YES or NO of a reply
  (:func:`retrieval_bench.llm.yes_no.parse_yes_no` with ``anywhere=True``, the
  judge's ``yes_no`` extractor), falling back on the first token's Yes/No
  logprobs when the text says neither;
* small validators for the options every helper shares.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.llm.prompt_files import parse_sections, template_fields
from retrieval_bench.llm.yes_no import p_yes, parse_yes_no

__all__ = [
    "Prompt",
    "call_all",
    "check_max_tokens",
    "check_temperature",
    "check_unit",
    "reply_text",
    "require_llm",
    "reply_yes_no",
    "shorten",
]

PROMPTS_PACKAGE = "retrieval_bench.metrics.answer.factuality"


def _placeholders(template: str, owner: str) -> set[str]:
    try:
        return template_fields(template, owner, "prompt")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class Prompt:
    """A system message (optional) and a user template with named placeholders."""

    system: str | None
    user: str

    @classmethod
    def load(cls, spec: str | Path, placeholders: Sequence[str], owner: str) -> Prompt:
        """A built-in prompt by name (``"claims"`` → ``prompts/claims.txt``) or a file path
        (anything that is not the name of a built-in prompt).

        The user template must use exactly ``placeholders`` (each at least once,
        no others); anything else raises :class:`ConfigError` naming it.
        """
        builtin = resources.files(PROMPTS_PACKAGE).joinpath("prompts", f"{spec}.txt")
        try:
            if isinstance(spec, str) and re.fullmatch(r"[a-z_]+", spec) and builtin.is_file():
                text = builtin.read_text(encoding="utf-8")
            else:
                text = Path(spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{owner}: cannot read prompt {str(spec)!r} ({exc}); pass a UTF-8 text file "
                "with a [user] section or a built-in prompt name"
            ) from None
        sections = parse_sections(text)
        if "user" not in sections:
            raise ConfigError(f"{owner}: prompt {str(spec)!r} has no [user] section")
        used = _placeholders(sections["user"], owner)
        wanted = set(placeholders)
        if used != wanted:
            raise ConfigError(
                f"{owner}: prompt {str(spec)!r} must use the placeholders "
                f"{', '.join('{' + p + '}' for p in sorted(wanted))}; "
                f"it uses {', '.join('{' + p + '}' for p in sorted(used)) or 'none'}"
            )
        return cls(sections.get("system") or None, sections["user"])

    def request(
        self,
        *,
        temperature: float,
        max_tokens: int,
        top_logprobs: int | None = None,
        **values: str,
    ) -> ChatRequest:
        """The chat request with ``values`` filled in (values are never re-parsed);
        ``top_logprobs`` asks for the first tokens' alternatives (yes/no questions)."""
        return chat_request(
            self.user.format_map(values),
            system=self.system,
            temperature=temperature,
            max_tokens=max_tokens,
            top_logprobs=top_logprobs,
        )


def call_all(llm: LLM, requests: Sequence[ChatRequest], owner: str) -> list[Completion | LLMError]:
    """Every request through one ``llm.chat_many`` (none at all for an empty list)."""
    if not requests:
        return []
    replies = llm.chat_many(list(requests))
    if len(replies) != len(requests):
        raise LLMError(
            f"{owner}: the LLM returned {len(replies)} replies for {len(requests)} requests"
        )
    return replies


def reply_text(reply: Completion | LLMError) -> tuple[str | None, str | None]:
    """(text, error) of one reply: a failed call gives ``(None, "LLM call failed: ...")``."""
    if isinstance(reply, LLMError):
        return None, f"LLM call failed: {reply}"
    return reply.text, None


YES_NO_LOGPROBS = 5
"""Alternatives asked for on yes/no questions, for :func:`reply_yes_no`'s fallback."""


def reply_yes_no(reply: Completion | LLMError) -> bool | None:
    """A yes/no reply's verdict: the first whole word YES/NO of the text; when the text
    has neither (small models often start "The claim is..."), P(Yes) over the Yes/No
    variants among the first generated token's top logprobs decides (> 0.5 yes, < 0.5
    no; the ``llm-logprob`` reranker's rule, docs/stages.md#llm-logprob). None when
    neither tells."""
    if isinstance(reply, LLMError):
        return None
    value = parse_yes_no(reply.text, anywhere=True)
    if value is None and reply.logprobs:
        value = p_yes(reply.logprobs[0].top)
    return None if value is None or value == 0.5 else value > 0.5


def shorten(text: str, limit: int = 80) -> str:
    """One line of at most ``limit`` characters (for reasons and errors)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check_unit(value: object, what: str, owner: str) -> float:
    """``value`` as a float in [0, 1], or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{owner}: {what} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{owner}: {what} must be in [0, 1], got {value}")
    return float(value)


def require_llm(llm: LLM | None, owner: str) -> LLM:
    """``llm``, or a TypeError when a metric that declares ``needs_llm`` got none."""
    if llm is None:
        raise TypeError(f"{owner}: no LLM client; pass llm= (the metric factory passes the run's)")
    return llm


def check_max_tokens(value: object, what: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {what} must be a positive integer, got {value!r}")
    return value


def check_temperature(value: object, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{owner}: temperature must be a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"{owner}: temperature must be >= 0, got {value}")
    return float(value)

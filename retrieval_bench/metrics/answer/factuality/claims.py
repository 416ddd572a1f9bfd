"""Claim extraction: a text → atomic claims, one LLM call.

Claim extraction (docs/metrics.md#factuality): given a short text (a sentence, a paragraph),
list the claims it makes — one model call per text. :class:`ClaimExtractor`
sends the calls for a whole batch of texts through **one** ``llm.chat_many``.

Parsing the reply (:func:`parse_claims`)
----------------------------------------
Models answer in many shapes; the parser accepts them all:

1. a JSON list standing on its own lines (``["a", "b"]``; a heading such as
   ``Claims:`` may precede it on its line, a code fence may wrap it; objects
   with a ``claim`` or ``text`` field count too, and ``{"claims": [...]}``)
   — used when it parses and holds strings (``[]`` means "no claims"); a
   ``["x"]`` inside a claim line is not taken for the list;
2. otherwise one claim per line, with bullets (``-``, ``*``, ``•``, ``+``),
   numbering (``1.``, ``2)``, ``(3)``, ``[4]``; a number must be followed by
   a space, so "3.5% is the top rate" keeps its number) and ``Claim 5:`` /
   ``Claim:`` prefixes stripped.

Then: surrounding quotes are stripped; empty lines, code fences, headings
(a line ending in ``:``, e.g. "Here are the claims:") and the sentinel
``NONE`` are dropped; duplicates (case and whitespace ignored, trailing
period ignored) are dropped keeping the first; at most ``max_claims`` are
kept (the rest are counted in :attr:`Claims.dropped`).

Degenerate cases
----------------
* a blank input text has no claims — no model call is made;
* a reply of ``NONE`` / ``[]`` (the prompt's "no claims" answer) → no claims;
* a blank reply → an error ("empty reply"): a model that says nothing has
  not said the text is claim-free;
* a failed call → an error ("LLM call failed: ...").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.llm.base import LLM
from retrieval_bench.metrics.answer.factuality.common import (
    Prompt,
    call_all,
    check_max_tokens,
    check_temperature,
    reply_text,
)

__all__ = ["DEFAULT_MAX_CLAIMS", "ClaimExtractor", "Claims", "parse_claims"]

DEFAULT_MAX_CLAIMS = 20
_PREFIX = re.compile(
    r"^(?:[-*•+]\s+|\(?\d{1,3}[.)]\s+|\[\d{1,3}\]\s*|claim\s*\d+\s*[:.)-]\s*|claim\s*:\s*)+",
    re.IGNORECASE,
)
_NONE_REPLIES = {"none", "no claims", "[]"}
_QUOTES = "\"'`“”‘’"


@dataclass(frozen=True)
class Claims:
    """The claims of one text, or the error that kept them from being read."""

    claims: tuple[str, ...] = ()
    raw: str | None = None
    """The model's reply (None when no call was made)."""
    error: str | None = None
    dropped: int = 0
    """Claims beyond ``max_claims`` that were cut off."""

    @property
    def ok(self) -> bool:
        return self.error is None


def _strings_of(items: list[Any]) -> list[str] | None:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            value = item.get("claim", item.get("text"))
            if isinstance(value, str):
                out.append(value)
    return out if out or not items else None


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` fills its lines (a heading like "Claims:" may precede
    it, code-fence backticks may follow): a ``["x"]`` inside a claim is not the list."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start].strip()
    line_end = text.find("\n", end)
    after = text[end : len(text) if line_end < 0 else line_end].strip().strip("`")
    return (not before or before.endswith(":")) and not after


def _json_items(text: str) -> list[str] | None:
    """The strings of a JSON list in ``text`` (None when there is no usable one)."""
    candidates = []
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end and _stands_alone(text, start, end + 1):
            candidates.append((start, text[start : end + 1]))
    for _, candidate in sorted(candidates):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            data = data.get("claims")
        if isinstance(data, list):
            found = _strings_of(data)
            if found is not None:
                return found
    return None


def _line_items(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("```"):
            continue
        out.append(_PREFIX.sub("", line))
    return out


def _key(claim: str) -> str:
    return " ".join(claim.casefold().split()).rstrip(".")


def parse_claims(text: str, max_claims: int = DEFAULT_MAX_CLAIMS) -> tuple[list[str], int]:
    """(claims, number dropped by the cap) of a model reply; see the module docstring."""
    stripped = text.strip()
    if stripped.casefold().strip(" .!") in _NONE_REPLIES:
        return [], 0
    items = _json_items(stripped)
    if items is None:
        items = _line_items(stripped)
    claims: list[str] = []
    seen: set[str] = set()
    for item in items:
        claim = item.strip().strip(_QUOTES).strip()
        if not claim or claim.endswith(":") or claim.casefold().strip(" .") == "none":
            continue
        key = _key(claim)
        if key in seen:
            continue
        seen.add(key)
        claims.append(claim)
    return claims[:max_claims], max(0, len(claims) - max_claims)


class ClaimExtractor:
    """Splits texts into atomic claims, a batch at a time (one ``chat_many``).

    Parameters: ``llm``; ``max_claims`` (cap per text, default 20);
    ``max_tokens`` of each reply (256); ``temperature`` (0.0); ``prompt``
    (a built-in prompt name or a file with a ``[user]`` section using
    ``{text}``; default the built-in ``claims``).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_claims: int = DEFAULT_MAX_CLAIMS,
        max_tokens: int = 256,
        temperature: float = 0.0,
        prompt: str | Path = "claims",
    ) -> None:
        owner = "claim extractor"
        self.llm = llm
        self.max_claims = check_max_tokens(max_claims, "max_claims", owner)
        self.max_tokens = check_max_tokens(max_tokens, "max_tokens", owner)
        self.temperature = check_temperature(temperature, owner)
        self.prompt = Prompt.load(prompt, ("text",), owner)

    def extract_many(self, texts: Sequence[str]) -> list[Claims]:
        """The claims of every text; all model calls in one ``chat_many`` (identical
        texts share one call, blank texts need none)."""
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"claim extractor: texts must be strings, got {type(t).__name__}")
        unique = list(dict.fromkeys(t for t in texts if t.strip()))
        requests = [
            self.prompt.request(temperature=self.temperature, max_tokens=self.max_tokens, text=t)
            for t in unique
        ]
        replies = call_all(self.llm, requests, "claim extractor")
        by_text = {t: self._read(r) for t, r in zip(unique, replies, strict=True)}
        return [by_text.get(t, Claims()) for t in texts]

    def extract(self, text: str) -> Claims:
        """The claims of one text (one call)."""
        return self.extract_many([text])[0]

    def _read(self, reply: Any) -> Claims:
        text, error = reply_text(reply)
        if text is None:
            return Claims(error=error)
        if not text.strip():
            return Claims(raw=text, error="claim extractor returned an empty reply")
        claims, dropped = parse_claims(text, self.max_claims)
        return Claims(tuple(claims), raw=text, dropped=dropped)

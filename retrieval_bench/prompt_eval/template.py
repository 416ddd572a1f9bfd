"""Prompt templates: ``{variable}`` placeholders, parameters, and the model request.

Placeholders are ``{name}`` with ``name`` an identifier; ``{{`` and ``}}``
are literal braces. Any other brace is literal too, so a JSON example such as
``{"category": "bug"}`` can be written as is. A placeholder naming a variable
the use case does not have is an error that names it — found when the prompt
is saved or imported, before any model call.

Parameters map to the OpenAI-compatible request: ``temperature`` and
``max_tokens`` (and ``stop``) go to :class:`ChatRequest` fields, the other
allowed ones (``top_p``, ``seed``, penalties...) travel in ``extra``. The
prompt's ``model``, when set, overrides the client's model in the payload, so
the response cache keys on it (llm/cache.py: model, messages, parameters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.llm.base import ChatRequest, Message
from retrieval_bench.prompt_eval.errors import InvalidPromptError
from retrieval_bench.prompt_eval.records import Prompt

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")

DEFAULT_MAX_TOKENS = 128
EXTRA_PARAMETERS = (
    "top_p",
    "top_k",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "repeat_penalty",
)
PARAMETERS = ("temperature", "max_tokens", "stop", *EXTRA_PARAMETERS)


def placeholders(template: str) -> list[str]:
    """Variable names used by a template, in order of first use."""
    names = [m.group(1) for m in _TOKEN.finditer(template) if m.group(1)]
    return list(dict.fromkeys(names))


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each ``{name}`` by ``values[name]``; ``{{``/``}}`` become braces."""

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return str(values[m.group(1)])

    return _TOKEN.sub(sub, template)


def _number(params: Mapping[str, Any], key: str, where: str, low: float, high: float) -> None:
    value = params.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidPromptError(f"{where}: parameter {key} must be a number in [{low}, {high}]")


def check_prompt(prompt: Prompt, variables: Sequence[str], use_case: str = "") -> None:
    """Raise :class:`InvalidPromptError` for an empty name/user prompt, a placeholder
    naming an unknown variable, or bad parameters."""
    where = (
        f"use case {use_case}: prompt {prompt.name!r}" if use_case else f"prompt {prompt.name!r}"
    )
    if not prompt.name.strip():
        raise InvalidPromptError(f"use case {use_case}: a prompt has an empty name; name it")
    if not prompt.user.strip():
        raise InvalidPromptError(f"{where}: the user prompt is empty")
    for part, template in (("system", prompt.system), ("user", prompt.user)):
        unknown = [v for v in placeholders(template) if v not in variables]
        if unknown:
            raise InvalidPromptError(
                f"{where}: {part} prompt uses unknown variable {{{unknown[0]}}}; "
                f"known variables: {', '.join('{' + v + '}' for v in variables)} "
                "(write {{ and }} for literal braces)"
            )
    params = dict(prompt.parameters)
    bad = [k for k in params if k not in PARAMETERS]
    if bad:
        raise InvalidPromptError(
            f"{where}: unknown parameter(s) {', '.join(bad)}; allowed: {', '.join(PARAMETERS)}"
        )
    _number(params, "temperature", where, 0.0, 2.0)
    _number(params, "top_p", where, 0.0, 1.0)
    max_tokens = params.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise InvalidPromptError(f"{where}: parameter max_tokens must be a positive integer")
    stop = params.get("stop")
    if stop is not None and not (
        isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str) for s in stop))
    ):
        raise InvalidPromptError(f"{where}: parameter stop must be a string or a list of strings")


def build_request(prompt: Prompt, variables: Mapping[str, str]) -> ChatRequest:
    """The chat request of one prompt on one row's variables."""
    params = dict(prompt.parameters)
    messages: list[Message] = []
    if prompt.system.strip():
        messages.append({"role": "system", "content": fill(prompt.system, variables)})
    messages.append({"role": "user", "content": fill(prompt.user, variables)})
    stop = params.get("stop") or ()
    extra: dict[str, Any] = {k: params[k] for k in EXTRA_PARAMETERS if k in params}
    if prompt.model:
        extra["model"] = prompt.model
    return ChatRequest(
        messages=tuple(messages),
        temperature=float(params.get("temperature", 0.0)),
        max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        extra=extra,
    )

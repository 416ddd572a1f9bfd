"""Small value coercers for ``UseCase.process``: response-processing combinator
functions (users may use any validation library instead; docs/architecture.md#prompt-evaluation).

Each takes a JSON value (possibly a string from a CSV cell or a model's
loose output) and returns a normalised value or raises ``ValueError`` naming
the field and what was expected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


def as_text(value: Any, field: str, *, allow_empty: bool = False) -> str:
    """A string, whitespace-collapsed; numbers are turned into text."""
    if isinstance(value, bool) or value is None or isinstance(value, list | dict):
        raise ValueError(f"{field} must be text, got {json.dumps(value)[:40]}")
    text = " ".join(str(value).split())
    if not text and not allow_empty:
        raise ValueError(f"{field} must not be empty")
    return text


def as_bool(value: Any, field: str) -> bool:
    """``true``/``false`` (also yes/no/1/0 as text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str | int) and str(value).strip().lower() in _TRUE | _FALSE:
        return str(value).strip().lower() in _TRUE
    raise ValueError(f"{field} must be true or false, got {json.dumps(value)[:40]}")


def as_choice(value: Any, field: str, choices: Iterable[str]) -> str:
    """One of ``choices``, ignoring case and punctuation (``How-to`` = ``howto``);
    returns the canonical spelling."""
    options = list(choices)
    text = as_text(value, field)
    key = "".join(normalise_words(text))
    for option in options:
        if "".join(normalise_words(option)) == key:
            return option
    raise ValueError(f"{field} must be one of {', '.join(options)}, got {text!r}")


def as_list(value: Any, field: str) -> list[Any]:
    """A JSON array (a CSV cell holding JSON text is decoded first)."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{field} is not a valid JSON array: {exc}") from exc
    if not isinstance(value, list):
        raise ValueError(f"{field} must be a list, got {json.dumps(value)[:40]}")
    return value


def normalise_words(text: str) -> tuple[str, ...]:
    """Lower-case alphanumeric words, for loose text comparison."""
    return tuple(re.findall(r"[a-z0-9]+", text.lower()))

"""Prompt files: the one reader for every ``prompts/*.txt`` of the package.

Prompts live in files, not in code, so they can be read, diffed and edited
without touching Python. A file is split into sections, each starting with a
line ``[name]`` (``[system]``, ``[user]``, ...); lines before the first section
are comments; a file without sections is one template. Files are read through
:mod:`importlib.resources`, so they work from an installed wheel. Templates
are filled with :meth:`str.format`; :func:`template_fields` checks their
placeholders.
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection
from functools import cache
from importlib import resources

_SECTION = re.compile(r"^\[([a-z_]+)\]\s*$")


def parse_sections(text: str) -> dict[str, str]:
    """``{"system": ..., "user": ...}`` of a prompt file's text (see module docstring)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            current = sections.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v).strip("\n") for k, v in sections.items()}


def has_section(text: str, name: str) -> bool:
    return any(line.strip() == f"[{name}]" for line in text.splitlines())


@cache
def read_prompt_text(package: str, name: str) -> str:
    """The raw text of ``<package>/prompts/<name>.txt`` (read once per process)."""
    return resources.files(package).joinpath("prompts", f"{name}.txt").read_text("utf-8")


@cache
def read_sections(package: str, name: str) -> dict[str, str]:
    """The sections of ``<package>/prompts/<name>.txt`` (cached per process)."""
    return parse_sections(read_prompt_text(package, name))


def template_fields(
    template: str, owner: str, what: str = "template", allowed: Collection[str] | None = None
) -> set[str]:
    """The placeholder names of a :meth:`str.format` template.

    Raises ValueError starting ``{owner}: `` when the template is malformed (a lone
    brace), a placeholder is not in ``allowed`` (when given), or one is not a plain
    name (``{0}``, ``{a.b}``, a format spec or conversion such as ``{x!r}``).
    """
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"{owner}: {what} is malformed ({exc}); write {{{{ and }}}} for literal braces"
        ) from None
    names = set()
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        conv, fmt = (f"!{conversion}" if conversion else ""), (f":{spec}" if spec else "")
        shown = f"{{{field}{conv}{fmt}}}"
        if allowed is not None and field not in allowed:
            raise ValueError(
                f"{owner}: unknown placeholder {shown} in {what}; use "
                f"{', '.join('{' + p + '}' for p in allowed)}, "
                "and {{ }} for literal braces"
            )
        if not field.isidentifier() or spec or conversion:
            plain = field if field.isidentifier() else "text"
            raise ValueError(
                f"{owner}: {what} placeholder {shown} must be a plain name like {{{plain}}} "
                "(no format spec or conversion)"
            )
        names.add(field)
    return names

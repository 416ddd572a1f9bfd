"""Prompt files: the one reader for every ``prompts/*.txt`` of the package.

Prompts live in files, not in code (SPEC §3.6), so they can be read, diffed and
edited without touching Python. A file is split into sections, each starting
with a line ``[name]`` (``[system]``, ``[user]``, ...); lines before the first
section are comments. Files are read through :mod:`importlib.resources`, so
they work from an installed wheel.
"""

from __future__ import annotations

import re
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


def read_prompt_text(package: str, name: str) -> str:
    """The raw text of ``<package>/prompts/<name>.txt``."""
    return resources.files(package).joinpath("prompts", f"{name}.txt").read_text("utf-8")


@cache
def read_sections(package: str, name: str) -> dict[str, str]:
    """The sections of ``<package>/prompts/<name>.txt`` (cached per process)."""
    return parse_sections(read_prompt_text(package, name))

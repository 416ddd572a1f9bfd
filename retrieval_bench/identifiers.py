"""Names that become file names: dataset names and stage labels
(docs/configuration.md#names-and-labels).

A run stores ``runs/<dataset>/<stage>.trec`` and ``artifacts/<dataset>/<stage>.jsonl``,
so a dataset name or a stage label is a path component. Both are *identifiers*:
a letter or digit, then letters, digits, ``.``, ``_`` or ``-`` (no ``/``, no
``..``, no leading dot or dash). The config schema and the Python builder check
names with :func:`check_identifier` when they are given; every path built from a
name goes through :func:`inside`, which refuses one that would leave its folder
(a second guard, for names read back from stored runs written before the rule).

This module imports nothing of the toolkit.
"""

from __future__ import annotations

import re
from pathlib import Path

IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""The rule every dataset name and stage label follows."""

RULE = "a letter or digit, then letters, digits, '.', '_' or '-', no '..'"
"""The rule in words, for error messages."""


def identifier_problem(value: object) -> str | None:
    """Why ``value`` is not an identifier (None when it is one)."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not IDENTIFIER.fullmatch(value) or ".." in value:
        return f"{value!r} is not a valid name: use {RULE}"
    return None


def check_identifier(value: str, what: str) -> str:
    """``value`` when it is an identifier; else :class:`ValueError` naming ``what``
    (``"stage label"``, ``"dataset name"``). Pydantic validators turn the
    ValueError into the config's one-line :class:`~retrieval_bench.errors.ConfigError`."""
    problem = identifier_problem(value)
    if problem is not None:
        raise ValueError(f"{what}: {problem}")
    return value


def inside(folder: Path, *names: str, suffix: str = "") -> Path:
    """``folder / names[0] / … / (names[-1] + suffix)``, refused with a
    :class:`ValueError` unless every name is an identifier and the path stays
    inside ``folder`` (checked on the resolved paths too, so a symlinked name
    cannot lead out)."""
    for name in names:
        problem = identifier_problem(name)
        if problem is not None:
            raise ValueError(f"refusing to build a path under {folder}: {problem}")
    path = folder.joinpath(*names[:-1], names[-1] + suffix)
    root = folder.resolve()
    if not path.resolve().is_relative_to(root):
        raise ValueError(f"refusing {path}: it resolves outside {folder}")
    return path


_DRIVE = re.compile(r"[A-Za-z]:/")


def repo_path_problem(path: str) -> str | None:
    """Why ``path`` (forward slashes) is not a path inside a repository: absolute, a
    drive letter, a ``..`` or empty component (None when it is one). Gold files name
    files of the snapshot, so nothing else can be gold."""
    if not path:
        return "an empty path"
    if path.startswith("/") or _DRIVE.match(path):
        return f"{path!r} is absolute: give the path inside the repository"
    parts = path.split("/")
    if ".." in parts:
        return f"{path!r} leaves the repository ('..')"
    if any(p in ("", ".") for p in parts):
        return f"{path!r} has an empty or '.' component"
    return None


_ENTITY_NAME = re.compile(r"[^\s.:/]+(\.[^\s.:/]+)*")


def entity_problem(entity: str) -> str | None:
    """Why ``entity`` is not ``path:Qualified.name`` (a repository path, a colon, dotted
    names without spaces; docs/metrics.md#function-and-module-level); None when it is."""
    path, colon, name = entity.rpartition(":")
    if not colon or not path or not name:
        return f"{entity!r} is not 'path:Qualified.name'"
    problem = repo_path_problem(path)
    if problem is not None:
        return f"{entity!r}: {problem}"
    if not _ENTITY_NAME.fullmatch(name):
        return f"{entity!r}: {name!r} is not a dotted name"
    return None

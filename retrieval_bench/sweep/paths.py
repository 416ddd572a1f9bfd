"""Reading a sweep grid's paths and alternatives, and checking them against the base.

A path names one place in the base config (docs/configuration.md#sweep): the
whole ``chunker`` (each alternative a chunker entry, a string ``ast`` short for
``{name: ast}``), ``chunker.name``, ``chunker.<param>``,
``<kind>.<label>.<param>`` (a parameter of the retriever, fusion or reranker
labelled ``<label>`` in the base; its ``name``/``id`` are swept as whole lists
instead), the whole lists ``retrievers``, ``fusions``, ``rerankers`` (a string
``llm-logprob`` is short for ``{name: llm-logprob}``), ``candidates`` and
``table_k``.

Each path is parsed into a :class:`Target` here and checked before any cell is
built: a registered stage name, a parameter the stage takes, a label the base
has. With ``chunker.name`` swept, a ``chunker.<param>`` path needs only one of
the swept chunkers to take the parameter; :attr:`Target.takes` records which do
(:mod:`retrieval_bench.sweep.grid` leaves the path out of the other cells).
Values are type-checked later, with each cell's whole config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.contracts.registry import CHUNKERS, FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.plan import entry_keys

STAGE_LISTS: dict[str, Registry[Any]] = {
    "retrievers": RETRIEVERS,
    "fusions": FUSIONS,
    "rerankers": RERANKERS,
}
"""The stage lists a path may replace whole or reach into by label."""
TOP_LEVEL = ("candidates", "table_k")
"""Top-level config keys a path may set."""
SWEEPABLE = (
    "chunker, chunker.name, chunker.<param>, retrievers.<label>.<param>, "
    "fusions.<label>.<param>, rerankers.<label>.<param>, retrievers, fusions, rerankers, "
    "candidates or table_k"
)
_CHUNKER_EXAMPLE = "[ast, {name: window, size: 256, unit: tokens}]"


@dataclass(frozen=True)
class Target:
    """A parsed grid path: ``section`` (``chunker``, a stage list, a top-level key),
    the stage ``label`` (stage lists only) and ``param`` (None: the whole value)."""

    path: str
    section: str
    label: str | None = None
    param: str | None = None
    takes: frozenset[int] | None = None
    """A ``chunker.<param>`` path beside a swept ``chunker.name``: the indexes of the
    ``chunker.name`` alternatives whose chunker takes the parameter (None: every one)."""


def normalised(path: str, alternatives: list[Any]) -> list[Any]:
    """The alternatives of ``path`` with shorthand expanded (stage entries as
    mappings); ConfigError when there are none or one repeats another."""
    where = f"sweep.grid.{path}"
    if not alternatives:
        raise ConfigError(f"{where}: no alternatives (an empty list)")
    if path in STAGE_LISTS:
        alternatives = [_stage_list(where, i, alt) for i, alt in enumerate(alternatives)]
    elif path == "chunker":
        alternatives = [_chunker_entry(where, i, alt) for i, alt in enumerate(alternatives)]
    seen: dict[Any, int] = {}
    for j, value in enumerate(alternatives):
        try:  # 1 and 1.0 are one value; lists and mappings compare by their JSON
            key: Any = (0, value)
            hash(key)
        except TypeError:
            key = (1, json.dumps(value, sort_keys=True, default=str))
        i = seen.setdefault(key, j)
        if i != j:
            raise ConfigError(
                f"{where}: alternative {j + 1} ({text(value)}) repeats alternative "
                f"{i + 1}; list each value once"
            )
    return alternatives


def _stage_list(where: str, i: int, alternative: Any) -> list[dict[str, Any]]:
    """One whole-list alternative as stage entries (``"bm25"`` → ``{"name": "bm25"}``)."""
    entries = alternative if isinstance(alternative, list) else None
    if entries is None or not all(isinstance(e, str | Mapping) for e in entries):
        raise ConfigError(
            f"{where}: alternative {i + 1} ({text(alternative)}) is not a list of stage "
            "entries; write e.g. [[], [llm-logprob], [{name: llm-yesno, max_candidates: 20}]]"
        )
    return [{"name": e} if isinstance(e, str) else dict(e) for e in entries]


def _chunker_entry(where: str, i: int, alternative: Any) -> dict[str, Any]:
    """One whole-chunker alternative as an entry (``"ast"`` → ``{"name": "ast"}``)."""
    if isinstance(alternative, str):
        return {"name": alternative}
    if isinstance(alternative, Mapping) and isinstance(alternative.get("name"), str):
        return dict(alternative)
    raise ConfigError(
        f"{where}: alternative {i + 1} ({text(alternative)}) is not a chunker entry "
        f"(a name, or a mapping with a name); write e.g. {_CHUNKER_EXAMPLE}"
    )


def target(base: BenchmarkConfig, path: str, alternatives: dict[str, list[Any]]) -> Target:
    """Parse and check ``path`` against the base config and the other paths."""
    where = f"sweep.grid.{path}"
    parts = path.split(".")
    if path == "chunker":
        return _whole_chunker(where, alternatives[path])
    if path in STAGE_LISTS or path in TOP_LEVEL:
        return Target(path, path)
    if parts[0] == "chunker" and len(parts) == 2:
        return _chunker_target(base, path, parts[1], alternatives)
    if parts[0] not in STAGE_LISTS or len(parts) < 3:
        raise ConfigError(f"{where}: not a sweepable path; use {SWEEPABLE}")
    section, label, param = parts[0], ".".join(parts[1:-1]), parts[-1]
    stages = STAGE_LISTS[section]
    if param in ("name", "id"):
        raise ConfigError(
            f"{where}: a stage's {param} is not swept by path; sweep whole lists instead "
            f"({section}: [[...], [...]])"
        )
    labels = [s.label for s in getattr(base, section)]
    if label not in labels:
        raise ConfigError(
            f"{where}: no {stages.noun} labelled {label!r}; labels: {', '.join(labels) or '(none)'}"
        )
    check_param(stages, getattr(base, section)[labels.index(label)].name, param, where)
    for i, entries in enumerate(alternatives.get(section, [])):
        entry = next((e for e in entries if (e.get("id") or e.get("name")) == label), None)
        if entry is None:
            raise ConfigError(
                f"{where}: alternative {i + 1} of sweep.grid.{section} ({text(entries)}) has "
                f"no {stages.noun} labelled {label!r}; set {param} inside that list instead"
            )
        check_param(stages, str(entry.get("name")), param, where)
    return Target(path, section, label, param)


def _whole_chunker(where: str, entries: list[dict[str, Any]]) -> Target:
    """Each entry's chunker is registered and takes the parameters it sets."""
    for i, entry in enumerate(entries):
        at = f"{where}: alternative {i + 1} ({text(entry)})"
        check_param(CHUNKERS, entry["name"], None, at)
        for param in entry:
            if param not in ("name", "id"):
                check_param(CHUNKERS, entry["name"], param, at)
    return Target("chunker", "chunker")


def _chunker_target(
    base: BenchmarkConfig, path: str, param: str, alternatives: dict[str, list[Any]]
) -> Target:
    where = f"sweep.grid.{path}"
    if "chunker" in alternatives:
        instead = "give each entry its name" if param == "name" else f"set {param} in those entries"
        raise ConfigError(
            f"{where}: cannot be combined with sweep.grid.chunker, which sweeps whole chunker "
            f"entries; {instead} instead"
        )
    names = alternatives.get("chunker.name")
    if names is None:  # the base's chunker in every cell
        if param != "name":
            check_param(CHUNKERS, base.chunker.name, param, where)
        return Target(path, "chunker", None, param)
    for name in names:
        if not isinstance(name, str):
            raise ConfigError(f"sweep.grid.chunker.name: {text(name)} is not a chunker name")
        check_param(CHUNKERS, name, None, "sweep.grid.chunker.name")
    if param == "name":
        return Target(path, "chunker", None, param)
    valid = {name: valid_parameters(CHUNKERS, name) for name in names}
    takes = frozenset(j for j, name in enumerate(names) if _takes(valid[name], param))
    if not takes:
        each = "; ".join(f"{n}: {', '.join(sorted(v or ())) or '(none)'}" for n, v in valid.items())
        raise ConfigError(
            f"{where}: no swept chunker takes parameter {param!r}; valid parameters: {each}"
        )
    return Target(path, "chunker", None, param, None if len(takes) == len(names) else takes)


def _takes(valid: set[str] | None, param: str) -> bool:
    return valid is None or param in valid


def valid_parameters(stages: Registry[Any], name: str) -> set[str] | None:
    """The keys a ``name`` entry may set: its ``Params`` and its kind's graph keys."""
    return set(entry_keys(stages, name))


def check_param(stages: Registry[Any], name: str, param: str | None, where: str) -> None:
    """ConfigError when ``name`` is not registered, or its factory takes no ``param``
    (the message lists the parameters it does take, as validation does)."""
    try:
        stages.get(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if param is None:
        return
    valid = valid_parameters(stages, name)
    if not _takes(valid, param):
        raise ConfigError(
            f"{where}: unknown parameter {param!r} of {stages.noun} {name!r}; "
            f"valid parameters: {', '.join(sorted(valid or ())) or '(none)'}"
        )


def text(value: Any) -> str:
    """A compact, YAML-like rendering: ``true``, ``null``, ``[a,b]``, ``{bm25:2}``; a
    stage entry reads ``rrf`` or ``rrf(id=r,k_rrf=10)``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ",".join(text(v) for v in value) + "]"
    if isinstance(value, Mapping) and isinstance(value.get("name"), str):
        rest = ",".join(f"{k}={text(v)}" for k, v in value.items() if k != "name")
        return value["name"] + (f"({rest})" if rest else "")
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{text(v)}" for k, v in value.items()) + "}"
    return str(value)

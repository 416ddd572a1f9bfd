"""Expanding a sweep's grid into cells: one validated benchmark config each.

The grid's paths (docs/configuration.md#sweep) are read and checked by
:mod:`retrieval_bench.sweep.paths`: a typo in a path, a parameter the stage
does not take or a stage that is not registered fails the sweep with the path
in the message, before any work. A cell's config is the base with its
assignments applied, validated again (the schema, then
:func:`~retrieval_bench.harness.run.validate.validate_stages`): a value of the
wrong type fails there, not in cell 37 of 40 after an hour. When
``chunker.name`` is swept, a cell with another chunker than the base's keeps
only the base chunker parameters it takes (``tokenizer``, not ``ast``'s
``budget`` on ``window``), and a swept ``chunker.<param>`` applies only to the
cells whose chunker takes it: combinations that differ only in a parameter
their chunker ignores are one cell (the first in grid order), whose label and
assignments leave the parameter out.

The grid's size and the ``max_cells`` limit count combinations, before that
collapsing. A ``random: N`` sweep draws N distinct combination numbers from
``range(grid size)`` and decodes each (mixed radix, the last path fastest, as
:func:`itertools.product` orders the grid), then collapses them as above (so
it may give fewer than N cells): a sample of a huge grid costs N cells, never
the grid.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.contracts.registry import CHUNKERS
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run import validate
from retrieval_bench.specs import format_validation_error
from retrieval_bench.sweep.paths import STAGE_LISTS, Target, normalised, target, text
from retrieval_bench.sweep.spec import SweepSpec, with_objective

_MAX_TEXT = 40
"""Longest value text in a cell label before it is shortened."""


@dataclass(frozen=True)
class Cell:
    """One point of the grid: what it sets, and the config that results."""

    index: int
    """Position in :func:`expand`'s list (0-based)."""
    label: str
    """``path=value`` pairs in grid order (``chunker.budget=256 rerankers=[llm-logprob]``):
    stable across runs of the same sweep and unique within it."""
    assignments: dict[str, Any]
    """Path → the alternative this cell takes (whole values as mappings or lists of
    them); a ``chunker.<param>`` its chunker does not take is left out."""
    config: BenchmarkConfig
    """The base config with the assignments applied, validated."""


def grid_size(sweep: SweepSpec) -> int:
    """The number of combinations of the full grid (the product of the alternative
    counts); fewer cells when some differ only in a parameter their chunker ignores."""
    return math.prod(len(alternatives) for alternatives in sweep.grid.values())


def expand(
    base: BenchmarkConfig,
    sweep: SweepSpec,
    max_cells: int | None = None,
    *,
    source: str | None = None,
) -> list[Cell]:
    """The cells of ``sweep`` over ``base``, every one validated.

    The full grid in :func:`itertools.product` order (the first path slowest),
    or with ``random: N`` N distinct combinations drawn with ``random.Random(seed)``,
    in grid order (the whole grid when N ≥ its size). Combinations that differ only
    in a ``chunker.<param>`` their chunker does not take are one cell, the first
    (so ``random: N`` may give fewer than N). More combinations than ``max_cells``
    (default: ``sweep.max_cells``) is a :class:`ConfigError` giving the count; with
    ``random: N`` the limit applies to the combinations drawn. Bad paths,
    alternatives or values raise :class:`ConfigError` naming ``sweep.grid.<path>``,
    prefixed with ``source`` (the file) when given. The objective's cut-off is added
    to the base's ``metrics`` (:func:`~retrieval_bench.sweep.spec.with_objective`).
    """
    try:
        return _expand(with_objective(base, sweep.objective), sweep, max_cells)
    except ConfigError as exc:
        if source is None:
            raise
        raise ConfigError(f"{source}: {exc}") from None


def _expand(base: BenchmarkConfig, sweep: SweepSpec, max_cells: int | None) -> list[Cell]:
    alternatives = {p: normalised(p, alts) for p, alts in sweep.grid.items()}
    targets = [target(base, path, alternatives) for path in alternatives]
    sizes = [len(alts) for alts in alternatives.values()]
    limit = sweep.max_cells if max_cells is None else max_cells
    picks = _picks(sweep, sizes, limit, _cell_count(targets, sizes))
    texts = {p: _value_texts(p, alts) for p, alts in alternatives.items()}
    base_data = base.model_dump()
    names = next((i for i, t in enumerate(targets) if t.path == "chunker.name"), 0)
    seen: set[tuple[int, ...]] = set()
    cells: list[Cell] = []
    for pick in picks:
        # -1: a chunker parameter this cell's chunker does not take (left out); only
        # such a path has takes, and only when chunker.name (at ``names``) is swept
        key = tuple(
            j if t.takes is None or pick[names] in t.takes else -1
            for t, j in zip(targets, pick, strict=True)
        )
        if key in seen:
            continue
        seen.add(key)
        kept = [(t, j) for t, j in zip(targets, key, strict=True) if j >= 0]
        chosen = {t.path: alternatives[t.path][j] for t, j in kept}
        label = " ".join(f"{t.path}={texts[t.path][j]}" for t, j in kept)
        config = _cell_config(base, base_data, [t for t, _ in kept], chosen, label)
        cells.append(Cell(len(cells), label, copy.deepcopy(chosen), config))
    return cells


# -- choosing the cells ------------------------------------------------------------
def _cell_count(targets: Sequence[Target], sizes: Sequence[int]) -> int:
    """How many cells the full grid makes once chunker parameters collapse."""
    total = math.prod(sizes)
    names = next((i for i, t in enumerate(targets) if t.path == "chunker.name"), None)
    partial = [(t.takes, n) for t, n in zip(targets, sizes, strict=True) if t.takes is not None]
    if names is None or not partial:
        return total
    rest = total // (sizes[names] * math.prod(n for _, n in partial))
    per_chunker = (math.prod(n for takes, n in partial if j in takes) for j in range(sizes[names]))
    return rest * sum(per_chunker)


def _picks(
    sweep: SweepSpec, sizes: Sequence[int], limit: int, cells: int
) -> Iterable[tuple[int, ...]]:
    """The alternative indexes of each combination, in grid order; refuses more than
    ``limit`` (``cells``: how many cells they make, for the message)."""
    total = math.prod(sizes)
    if sweep.random is None:
        if total > limit:
            factors = " × ".join(str(n) for n in sizes)
            what = f"{total:,} cells ({factors}), more than --max-cells {limit}"
            if cells < total:  # the limit still counts combinations
                what = (
                    f"{total:,} combinations ({factors}; {cells:,} distinct cells, as a "
                    "chunker parameter applies only to the chunkers that take it), more than "
                    f"--max-cells {limit}, which counts combinations"
                )
            raise ConfigError(
                f"the sweep grid has {what}: narrow the grid, sample with random: N, "
                f"or pass --max-cells {total}"
            )
        return itertools.product(*(range(n) for n in sizes))
    n = min(sweep.random, total)
    if n > limit:
        raise ConfigError(
            f"random: {sweep.random:,} draws {n:,} cells, more than --max-cells {limit}: "
            f"sample fewer, or pass --max-cells {n}"
        )
    if n == total:
        return itertools.product(*(range(k) for k in sizes))
    rng = random.Random(sweep.seed)
    if total <= sys.maxsize:
        numbers = rng.sample(range(total), n)
    else:  # range() too long for sample(); n ≤ limit is tiny next to total
        drawn: dict[int, None] = {}
        while len(drawn) < n:
            drawn[rng.randrange(total)] = None
        numbers = list(drawn)
    return (_unrank(number, sizes) for number in sorted(numbers))


def _unrank(number: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """Cell ``number`` of the grid as alternative indexes (the last path fastest)."""
    digits = []
    for size in reversed(sizes):
        number, digit = divmod(number, size)
        digits.append(digit)
    return tuple(reversed(digits))


# -- building a cell ---------------------------------------------------------------
def _cell_config(
    base: BenchmarkConfig,
    base_data: dict[str, Any],
    targets: Sequence[Target],
    chosen: Mapping[str, Any],
    label: str,
) -> BenchmarkConfig:
    """The base with ``chosen`` applied, validated; a failure names the path to blame."""
    data = copy.deepcopy(base_data)
    # whole values first (stage lists, the chunker's name), then the parameters inside
    for t in sorted(targets, key=lambda t: t.param not in (None, "name")):
        value = copy.deepcopy(chosen[t.path])
        if t.param is None:
            data[t.section] = value
        elif t.section == "chunker" and t.param == "name":
            data["chunker"] = _renamed_chunker(base, value)
        elif t.section == "chunker":
            data["chunker"][t.param] = value
        else:
            entry = next(e for e in data[t.section] if (e.get("id") or e.get("name")) == t.label)
            entry[t.param] = value
    try:
        config = BenchmarkConfig.model_validate(data)
        validate.validate_stages(config)
    except ValidationError as exc:
        raise _blame(format_validation_error(None, exc), targets, chosen, data, label) from None
    except ConfigError as exc:
        raise _blame(str(exc), targets, chosen, data, label) from None
    return config


def _renamed_chunker(base: BenchmarkConfig, name: str) -> dict[str, Any]:
    """The base chunker under ``name``: its parameters that chunker takes."""
    spec = base.chunker
    params = spec.params()
    if name != spec.name:
        accepted = CHUNKERS.params_of(name).model_fields
        params = {k: v for k, v in params.items() if k in accepted}
    return {"name": name, "id": spec.id, **copy.deepcopy(params)}


def _blame(
    message: str,
    targets: Sequence[Target],
    chosen: Mapping[str, Any],
    data: Mapping[str, Any],
    label: str,
) -> ConfigError:
    """A cell's validation error, put on the path whose value it is about: the path
    whose place in the config is nearest the error's location (``retrievers.0.k1``)."""
    loc = message.split(":", 1)[0].split(" (", 1)[0]
    best: tuple[int, Target] | None = None
    for t in targets:
        place = _place(t, data)
        near = loc == place or loc.startswith(place + ".") or place.startswith(loc + ".")
        if near and (best is None or len(place) > best[0]):
            best = (len(place), t)
    if best is None and len(targets) > 1:
        return ConfigError(f"sweep cell {label}: {message}")
    path = (targets[0] if best is None else best[1]).path  # one path: nothing else to blame
    cell = f" (cell {label})" if len(targets) > 1 else ""
    return ConfigError(
        f"sweep.grid.{path}: the value {text(chosen[path])} is not valid: {message}{cell}"
    )


def _place(t: Target, data: Mapping[str, Any]) -> str:
    """Where ``t`` lands in the config, as validation errors spell locations."""
    if t.section == "chunker":
        return "chunker" if t.param in (None, "name") else f"chunker.{t.param}"
    if t.label is None:
        return t.section
    labels = [e.get("id") or e.get("name") for e in data[t.section]]
    return f"{t.section}.{labels.index(t.label)}.{t.param}"


# -- labels ------------------------------------------------------------------------
def _value_texts(path: str, alternatives: Sequence[Any]) -> list[str]:
    """How each alternative of ``path`` reads in a cell label: short, and distinct.

    Stage lists read as their labels (``[bm25,exact]``), else with parameters
    (``[rrf(k_rrf=10)]``); a text over 40 characters keeps its end (``…/minilm``);
    when shortening makes two alike, each gets its number (``[rrf]#2``).
    """
    tries: list[Iterator[str]] = []
    if path in STAGE_LISTS:  # first their labels only
        tries.append(
            "[" + ",".join(str(e.get("id") or e.get("name")) for e in a) + "]" for a in alternatives
        )
    tries.append(text(a) for a in alternatives)
    first: list[str] = []
    for attempt in tries:
        texts = [_clip(t) for t in attempt]
        first = first or texts
        if len(set(texts)) == len(texts):
            return texts
    return [f"{t}#{i + 1}" for i, t in enumerate(first)]


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else "…" + text[-(_MAX_TEXT - 1) :]

"""Retrieval measures as values (docs/metrics.md#measures-as-values).

A measure is a family (``Acc``, ``R``, ``nDCG``, ``F1``, ``Lost`` …), an
optional level prefix (``chunk_``, ``line_``), and a cut: a rank cutoff
(``@5``) or a token budget (``@8k``). It is parsed from the same string it
prints to (``parse_measure("F1@8k")`` → ``Measure("F1", budget=8000)``, whose
``str`` is ``"F1@8k"``), so stored results, tables, configs and the CLI keep
using the strings while code asks the value: its direction, its cutoff, the
``ks`` and ``budgets`` a run must compute to produce it. Modelled on
ir_measures' ``measures/base.py`` and ``util.parse_measure``.

Names the toolkit does not know (an answer metric such as ``token_f1``, a
stage's own cost ``seconds``) parse too, as *opaque* measures: higher is better
unless :data:`LOWER_IS_BETTER` names them, no cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval_bench.errors import ConfigError

RANKED = frozenset({"P", "R", "Hit", "Acc", "nDCG", "F1", "Lost"})
"""Families cut at a rank: ``R@10`` is measured on the top 10 files."""
WHOLE = frozenset({"MRR", "MAP"})
"""Families over the whole ranking (no cut)."""
BUDGETED = frozenset({"P", "R", "F1"})
"""Families cut at a token budget: ``F1@8k`` (docs/metrics.md#token-budgets)."""
_ENTITY = frozenset({"P", "R", "Hit", "Acc", "nDCG", "MRR", "MAP"})
LEVELS: dict[str, frozenset[str]] = {
    "": RANKED | WHOLE,
    "chunk_": _ENTITY,
    "line_": frozenset({"P", "R", "F1"}),
    "module_": _ENTITY,
    "function_": _ENTITY,
}
"""Level prefix → the families measured there (file level: no prefix)."""
LOWER = frozenset({"Lost"})
"""Families where smaller is better."""
LOWER_IS_BETTER = frozenset({"lost", "failed", "seconds", "llm_calls", "llm_tokens"})
"""Opaque names (per-query bookkeeping and costs) where smaller is better."""

_FORM = re.compile(
    r"^(?P<level>chunk_|line_|module_|function_)?(?P<family>[A-Za-z][A-Za-z0-9]*)(?:@(?P<cut>\S+))?$"
)


@dataclass(frozen=True)
class Measure:
    """One measure (module doc). ``cutoff`` and ``budget`` are exclusive."""

    family: str
    cutoff: int | None = None
    budget: int | None = None
    level: str = ""
    opaque: bool = False
    """A name the toolkit does not define (kept as given)."""

    @property
    def higher_is_better(self) -> bool:
        if self.opaque:
            return self.family.lower() not in LOWER_IS_BETTER
        return self.family not in LOWER

    @property
    def name(self) -> str:
        """The family with its level prefix (``chunk_R``)."""
        return self.level + self.family

    def __str__(self) -> str:
        if self.budget is not None:
            return f"{self.name}@{budget_label(self.budget)}"
        if self.cutoff is not None:
            return f"{self.name}@{self.cutoff}"
        return self.name

    def __matmul__(self, cut: int) -> Measure:
        """``Acc @ 5``: the family at another rank cutoff."""
        return Measure(self.family, cutoff=cut, level=self.level)


def budget_label(budget: int) -> str:
    """Suffix of a token budget, exact: 8000 → ``8k``, 8192 → ``8.192k``, 500 → ``0.5k``."""
    if budget <= 0:
        raise ValueError(f"token budget must be positive, got {budget}")
    whole, rest = divmod(budget, 1000)
    return f"{whole}{f'.{rest:03d}'.rstrip('0') if rest else ''}k"


def parse_measure(text: str, strict: bool = False) -> Measure:
    """The :class:`Measure` ``text`` names (``str`` of it gives ``text`` back).

    With ``strict`` a name that is not a retrieval measure of this toolkit raises
    :class:`ConfigError` naming the forms; otherwise it is an opaque measure.
    """
    text = text.strip()
    m = _FORM.match(text)
    if m is not None:
        level, family, cut = m.group("level") or "", m.group("family"), m.group("cut")
        if family in LEVELS[level]:
            if cut is None and family in WHOLE:
                return Measure(family, level=level)
            ranked = cut is not None and cut.isdigit() and family in RANKED
            if ranked and int(cut) > 0 and str(int(cut)) == cut:
                return Measure(family, cutoff=int(cut), level=level)
            if cut is not None and family in BUDGETED and level in ("", "line_"):
                budget = _budget(cut)
                if budget is not None:
                    return Measure(family, budget=budget, level=level)
    if strict:
        raise ConfigError(
            f"{text!r} is not a retrieval measure: give {'/'.join(sorted(RANKED))}@<k>, "
            f"{'/'.join(sorted(WHOLE))}, P/R/F1@<tokens>k (a budget), with chunk_ or "
            "line_ for the span levels (docs/metrics.md#measures-as-values)"
        )
    return Measure(text, opaque=True)


def _budget(cut: str) -> int | None:
    if not cut.endswith("k"):
        return None
    try:
        budget = round(float(cut[:-1]) * 1000)
    except ValueError:
        return None
    return budget if budget > 0 and budget_label(budget) == cut else None


def cut_lists(measures: list[Measure]) -> tuple[list[int], list[int]]:
    """The rank cutoffs and token budgets a run must compute to produce ``measures``."""
    ks = sorted({m.cutoff for m in measures if m.cutoff is not None})
    budgets = sorted({m.budget for m in measures if m.budget is not None})
    return ks, budgets

"""How many typos a query term may contain, by its length: the typo budget
shared by both backends of the ``fuzzy`` retriever (the embedded tantivy index
in :mod:`retrieval_bench.retrieval.fuzzy`, a Meilisearch server in
:mod:`retrieval_bench.retrieval.meili`); see docs/stages.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrieval_bench.errors import ConfigError


@dataclass(frozen=True)
class TypoBudget:
    """How many typos a query term may contain, by its length in characters.

    Meilisearch's rule (``typoTolerance.minWordSizeForTypos``): terms shorter
    than ``one_typo`` get none, shorter than ``two_typos`` one, longer two.
    """

    one_typo: int = 5
    two_typos: int = 9

    def __post_init__(self) -> None:
        if not 1 <= self.one_typo <= self.two_typos <= 255:
            raise ConfigError(
                f"fuzzy: typo_budget needs 1 <= one_typo <= two_typos <= 255, "
                f"got one_typo={self.one_typo}, two_typos={self.two_typos}"
            )

    def distance(self, term: str) -> int:
        """The most edits allowed for ``term`` (0, 1 or 2)."""
        n = len(term)
        return 2 if n >= self.two_typos else 1 if n >= self.one_typo else 0

    @classmethod
    def of(cls, value: TypoBudget | Mapping[str, int] | Sequence[int] | None) -> TypoBudget:
        """Accept a budget, ``{"one_typo": 5, "two_typos": 9}`` (or Meilisearch's
        ``oneTypo``/``twoTypos``), ``[5, 9]``, or ``None`` for the default."""
        if value is None or isinstance(value, TypoBudget):
            return value or cls()
        if isinstance(value, Mapping):
            names = {"oneTypo": "one_typo", "twoTypos": "two_typos"}
            sizes = {names.get(key, key): int(size) for key, size in value.items()}
            if unknown := sorted(set(sizes) - {"one_typo", "two_typos"}):
                raise ConfigError(f"fuzzy: typo_budget has unknown keys {unknown}")
            return cls(**sizes)
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
            return cls(int(value[0]), int(value[1]))
        raise ConfigError(
            f"fuzzy: typo_budget {value!r} must be {{one_typo: N, two_typos: M}} or [N, M]"
        )

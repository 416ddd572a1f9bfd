"""The data of the prompt-evaluation workflow (docs/architecture.md#prompt-evaluation).

- :class:`Row`: one ground-truth row — values for the prompt variables and the
  expected values of the use case's ground-truth fields (as JSON values).
- :class:`Prompt`: one prompt template — model, system prompt, user prompt,
  parameters (temperature, max_tokens...).
- :class:`RowOutcome`: what one prompt did on one row (raw text, parsed
  response, per-field evaluation or the error).
- :class:`PromptResult`: one prompt over all rows; ``counts`` holds, per
  column, the number of rows whose field matched the ground truth (boolean
  fields) or the summed value (extra numeric fields such as TP/FN), the shape
  a use case's ``sort`` receives.

``version`` is the optimistic-concurrency token: an edit carries the version
it was based on (0 for a new record) and the store refuses it when the stored
version moved on (two browser tabs editing the same table).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

EvalValue = bool | int | float
"""A per-field evaluation value: a match flag, or a number such as a TP count."""


@dataclass(frozen=True)
class Row:
    id: str
    variables: Mapping[str, str]
    expected: Mapping[str, Any]
    """Ground-truth field → expected value (JSON-compatible)."""
    version: int = 0

    def with_version(self, version: int) -> Row:
        return replace(self, version=version)


@dataclass(frozen=True)
class Prompt:
    name: str
    user: str
    system: str = ""
    model: str = ""
    """Model name sent to the server; empty = the client's configured model."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    version: int = 0

    def with_version(self, version: int) -> Prompt:
        return replace(self, version=version)

    @property
    def label(self) -> str:
        return f"{self.name}@v{self.version}" if self.version else self.name


@dataclass(frozen=True)
class RowOutcome:
    row_id: str
    row_version: int
    raw: str | None
    """The model's text; None when the call itself failed."""
    response: Mapping[str, Any] | None
    """The processed response; None when parse/process failed."""
    evaluation: Mapping[str, EvalValue] | None
    """Per-field match flags plus extras; None for a failed row."""
    error: str | None
    score: float
    """The use case's per-row score in [0, 1] (0 for a failed row); the paired
    significance test against the baseline runs over these."""
    cached: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class PromptResult:
    prompt: Prompt
    counts: Mapping[str, float]
    """Column → number of rows matching (bool fields) or summed value (numeric extras)."""
    outcomes: tuple[RowOutcome, ...]

    @property
    def name(self) -> str:
        return self.prompt.name

    @property
    def n_rows(self) -> int:
        return len(self.outcomes)

    @property
    def n_failed(self) -> int:
        return sum(o.failed for o in self.outcomes)

    @property
    def score(self) -> float:
        """Mean per-row score (NaN with no rows)."""
        if not self.outcomes:
            return math.nan
        return sum(o.score for o in self.outcomes) / len(self.outcomes)

    def outcome(self, row_id: str) -> RowOutcome | None:
        return next((o for o in self.outcomes if o.row_id == row_id), None)


@dataclass(frozen=True)
class BaselineComparison:
    """A prompt against the baseline prompt over the rows both ran on."""

    candidate: str
    baseline: str
    verdict: str
    """``better``/``worse``/``same`` by the use case's sort rule (first in the sort = better)."""
    candidate_score: float
    baseline_score: float
    p_value: float
    """Paired randomisation test over per-row scores (two-sided); NaN under 2 rows."""
    n_rows: int
    wins: int
    """Rows where the candidate's score is higher than the baseline's."""
    losses: int
    significant: bool
    """``verdict`` is not ``same`` and ``p_value < alpha``."""

    @property
    def delta(self) -> float:
        return self.candidate_score - self.baseline_score


@dataclass(frozen=True)
class EvaluationRun:
    """One run of a use case: prompt results best → worst, baseline comparisons,
    and what the model calls cost (``model_calls == 0`` when all came from cache)."""

    use_case: str
    results: tuple[PromptResult, ...]
    baseline: str | None
    comparisons: Mapping[str, BaselineComparison]
    model_calls: int
    cache_hits: int
    failures: int
    seconds: float
    n_rows: int
    skipped_rows: Mapping[str, str] = field(default_factory=dict)
    """Row id → why it was left out (fails the use case's validation now)."""
    run_id: str | None = None

    def result(self, prompt: str) -> PromptResult:
        for r in self.results:
            if r.name == prompt:
                return r
        raise KeyError(f"no result for prompt {prompt!r} in this run")

    def rank(self, prompt: str) -> int:
        return 1 + [r.name for r in self.results].index(prompt)

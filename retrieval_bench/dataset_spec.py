"""The ``datasets:`` entries and the ``metrics:`` section of a benchmark config
(docs/configuration.md#datasets, docs/configuration.md#metrics).

Below :mod:`retrieval_bench.config`, which re-exports both, so that the config
module stays one schema and its checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from retrieval_bench.files import check_include
from retrieval_bench.identifiers import check_identifier

Conventions = Literal["locagent", "rbench"]
"""The rules of the module and function levels (docs/metrics.md#conventions)."""
CONVENTIONS: tuple[Conventions, ...] = ("locagent", "rbench")
DEFAULT_CONVENTIONS: Conventions = "locagent"
STORED_DEFAULT: Conventions = "rbench"
"""The conventions of a run stored before ``metrics.conventions`` existed."""
Level = Literal["file", "module", "function"]
LEVELS: tuple[Level, ...] = ("file", "module", "function")


class DatasetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, AfterValidator(lambda v: check_identifier(v, "dataset name"))]
    """Names the run's files of this dataset (``runs/<name>/``): an identifier
    (:mod:`retrieval_bench.identifiers`)."""
    questions: Path
    snapshot: str | None = None
    """A folder, tarball, ``git+URL@COMMIT`` or ``NAME==VERSION`` (PyPI sdist): the
    snapshot of rows that name none themselves (docs/datasets.md#per-question-snapshots)."""
    repo: str | None = None
    """``owner/name`` of rows that give a ``commit`` but no ``repo``."""
    commit_is: Literal["state", "parent"] = "state"
    """A row's ``commit`` is the state asked about, or the change whose parent is."""
    sha256: str | None = None
    """Expected sdist sha256 (PyPI snapshots); looked up in the devsets manifest if absent."""
    split: str | None = None
    """Only examples of this split (e.g. ``dev``); None = all."""
    limit: int | None = Field(default=None, gt=0)
    train_split: str | None = None
    """Split that trains the learned stages (``learned``/``optimized`` fusion,
    ``dense-adapted``); it must differ from ``split``."""
    train_limit: int | None = Field(default=None, gt=0)
    """Only the first N training examples (LLM stages also run on them)."""
    ignore: list[str] = Field(default_factory=list)
    """Extra gitignore-style patterns, on top of the repository's .gitignore/.rbenchignore."""
    include: Annotated[list[str], AfterValidator(check_include)] = Field(default_factory=list)
    """Globs such as ``*.py``: only the files one of them matches are kept (docs/datasets.md)."""
    gold_paths: Literal["exact", "suffix"] = "exact"
    """``suffix``: a gold path the snapshot lacks is mapped to the one snapshot file
    whose path ends with ``/<gold path>`` (labels made against a release whose layout
    moved, e.g. ``requests/x.py`` → ``src/requests/x.py``; docs/datasets.md#missing-gold)."""
    gold_functions: Path | None = None
    """A JSONL of ``{id, gold_functions}`` rows merged into the questions by id: the
    gold functions of questions whose own rows carry none
    (docs/metrics.md#function-and-module-level). Relative to the config file."""
    hash_split: float | None = Field(default=None, gt=0, lt=1)
    """Every question gets its split from a hash of its id: this fraction ``test``, the
    rest ``dev``, replacing any split the rows carry (stable across runs and machines;
    docs/datasets.md#splits)."""


class MetricsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    budgets: list[int] = Field(default_factory=lambda: [8000])
    """Token budgets of context (file-level P/R/F1 at each)."""
    subsets: list[str] = Field(default_factory=lambda: ["leaks_path"])
    """Boolean example metadata keys to report on/off separately (docs/metrics.md#aggregation)."""
    levels: list[Level] = Field(default_factory=lambda: list(LEVELS))
    """Levels the tables show; module and function measures exist for questions with
    gold functions (docs/metrics.md#function-and-module-level)."""
    conventions: Conventions = DEFAULT_CONVENTIONS
    """The rules of the module and function levels (docs/metrics.md#conventions):
    ``locagent`` (gold derived by LocAgent's rules, ``__init__`` folded into its class,
    Acc@k over min(|G|, k)) so numbers compare with published tables, or ``rbench``
    (this project's gold rules, every gold item in the top k)."""

    @field_validator("ks", "budgets")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(x <= 0 for x in v):
            raise ValueError("must be a non-empty list of positive integers")
        return sorted(set(v))

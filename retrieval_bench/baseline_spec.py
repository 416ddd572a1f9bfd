"""The ``baseline:`` section of a benchmark config: the stage and metric the
per-stage table's paired columns and the fusion guard compare with
(docs/metrics.md#paired-columns-of-the-per-stage-table).

A module below :mod:`retrieval_bench.config` (it imports nothing of the toolkit),
read by it and by :mod:`retrieval_bench.harness.compare.paired`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, field_validator

STAGE_LEVEL_METRICS = ("seconds", "llm_calls", "llm_cache_hits", "llm_tokens")
"""Per-stage table entries that are totals of the stage, not means of per-query values."""


class BaselineSpec(BaseModel):
    """``baseline: {stage: bm25, metric: Acc@5}``; either key may be left out (the
    defaults are resolved by :func:`retrieval_bench.harness.compare.paired.resolve_baseline`:
    the first retriever; the first per-query metric of ``table_columns``, else
    ``R@<table_k>``)."""

    model_config = ConfigDict(extra="forbid")
    stage: str | None = None
    """A stage label (default: the first retriever)."""
    metric: str | None = None
    """A per-query metric, e.g. ``Acc@5`` (default: the first of ``table_columns``,
    else ``R@<table_k>``)."""

    @field_validator("metric")
    @classmethod
    def _per_query_metric(cls, v: str | None) -> str | None:
        if v in STAGE_LEVEL_METRICS:
            raise ValueError(f"{v!r} is a stage total, not a per-query metric; pick e.g. R@10")
        return v

    def check_stage(self, labels: Sequence[str]) -> None:
        """ValueError (one line, naming the labels) when ``stage`` is not one of ``labels``."""
        if self.stage is not None and self.stage not in labels:
            raise ValueError(
                f"baseline.stage: {self.stage!r} is not a stage label; "
                f"choose one of: {', '.join(labels)}"
            )

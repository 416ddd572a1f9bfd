"""A stored run's config, read with one set of defaults.

A run keeps its config as JSON data: ``config.json`` of its folder holds
``{"config": <BenchmarkConfig.model_dump(mode="json")>, "provenance": ...}`` and the
results database's run rows carry the same mapping (:attr:`RunRecord.config`).
``rbench eval`` runs store another shape, ``{"kind": "eval", "predictions": ...,
"metrics": [<answer metric specs>], ...}``, and runs stored by older versions lack
keys added since. :class:`StoredConfig` reads either with typed accessors; where a
key is absent (or not of its type) it gives the default the config itself would have
filled in: :mod:`retrieval_bench.config_defaults` (``table_k``, ``candidates``) and
:class:`retrieval_bench.dataset_spec.MetricsSpec` (``metrics.ks``, ``budgets``,
``levels``).

Below :mod:`retrieval_bench.config` (the store layer), so it never validates: a stored
config is read as it is, whatever version wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from retrieval_bench.config_defaults import CANDIDATES, TABLE_K
from retrieval_bench.dataset_spec import STORED_DEFAULT, MetricsSpec

__all__ = ["STAGE_KINDS", "RunKind", "StoredConfig", "stage_label"]

RunKind = Literal["benchmark", "eval"]
STAGE_KINDS = ("retrievers", "fusions", "rerankers")
"""The config's stage lists, in pipeline order."""


_METRICS = MetricsSpec()
"""The ``metrics:`` section's defaults."""


def stage_label(spec: Mapping[str, Any]) -> str:
    """A stored stage entry's label: its ``id``, else its ``name``."""
    return str(spec.get("id") or spec.get("name"))


def _positive_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _mappings(value: object) -> list[dict[str, Any]]:
    """The mapping entries of a stored list (anything else: none)."""
    if not isinstance(value, list):
        return []
    return [dict(v) for v in value if isinstance(v, Mapping)]


@dataclass(frozen=True)
class StoredConfig:
    """Typed, read-only access to a stored run's config mapping (``raw``)."""

    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, config: StoredConfig | Mapping[str, Any] | None) -> StoredConfig:
        """``config`` itself, or a stored config reading the mapping (None: an empty one)."""
        if isinstance(config, StoredConfig):
            return config
        return cls(MappingProxyType(dict(config) if isinstance(config, Mapping) else {}))

    @classmethod
    def from_saved(cls, saved: Mapping[str, Any]) -> StoredConfig:
        """The config of a run folder's ``config.json`` data (``{"config": ..., ...}``)."""
        return cls.of(saved.get("config"))

    def get(self, key: str) -> Any:
        """The raw value of ``key`` (None when absent): for keys without an accessor."""
        return self.raw.get(key)

    # ---------------------------------------------------------------- the run

    @property
    def kind(self) -> RunKind:
        """``eval`` for an ``rbench eval`` run, else ``benchmark``."""
        return "eval" if self.raw.get("kind") == "eval" else "benchmark"

    @property
    def is_eval(self) -> bool:
        return self.kind == "eval"

    @property
    def name(self) -> str | None:
        """The config's ``name`` (None when absent or empty)."""
        value = self.raw.get("name")
        return str(value) if value else None

    @property
    def predictions(self) -> str | None:
        """An eval run's predictions file (None when absent or empty)."""
        value = self.raw.get("predictions")
        return str(value) if value else None

    # ---------------------------------------------------------------- datasets

    @property
    def datasets(self) -> list[dict[str, Any]]:
        """The ``datasets:`` entries (copies; entries that are not mappings left out)."""
        return _mappings(self.raw.get("datasets"))

    @property
    def dataset_names(self) -> list[str]:
        """The names of the datasets, in config order (entries without one left out)."""
        return [str(d["name"]) for d in self.datasets if d.get("name")]

    # ---------------------------------------------------------------- numbers

    @property
    def table_k(self) -> int:
        """The cut-off the run's tables show (default ``TABLE_K``)."""
        return _positive_int(self.raw.get("table_k")) or TABLE_K

    @property
    def candidates(self) -> int:
        """Chunks per query of each retriever and fusion (default ``CANDIDATES``)."""
        return _positive_int(self.raw.get("candidates")) or CANDIDATES

    @property
    def metrics(self) -> Mapping[str, Any]:
        """The ``metrics:`` section (empty when absent or not a mapping: an eval run's
        ``metrics`` is its list of answer metrics, read through :meth:`get`)."""
        spec = self.raw.get("metrics")
        return spec if isinstance(spec, Mapping) else {}

    @property
    def ks(self) -> list[int]:
        """``metrics.ks`` (default: ``MetricsSpec``'s)."""
        value = self.metrics.get("ks")
        return [int(k) for k in value] if isinstance(value, list) else list(_METRICS.ks)

    @property
    def budgets(self) -> list[int]:
        """``metrics.budgets`` (default: ``MetricsSpec``'s)."""
        value = self.metrics.get("budgets")
        return [int(b) for b in value] if isinstance(value, list) else list(_METRICS.budgets)

    @property
    def levels(self) -> list[str]:
        """``metrics.levels`` (default: ``MetricsSpec``'s)."""
        value = self.metrics.get("levels")
        return [str(v) for v in value] if isinstance(value, list) else list(_METRICS.levels)

    @property
    def conventions(self) -> str:
        """``metrics.conventions``; a run stored before the key was scored by this
        project's own rules (``rbench``), whatever today's default is."""
        value = self.metrics.get("conventions")
        return str(value) if isinstance(value, str) else STORED_DEFAULT

    # ---------------------------------------------------------------- the table

    @property
    def table_columns(self) -> list[str]:
        """The table's own metric columns (none when absent)."""
        value = self.raw.get("table_columns")
        return [str(c) for c in value] if isinstance(value, list) else []

    @property
    def baseline(self) -> Mapping[str, Any]:
        """The ``baseline:`` section (empty when absent)."""
        value = self.raw.get("baseline")
        return value if isinstance(value, Mapping) else {}

    # ---------------------------------------------------------------- stages

    def stages(self, kind: str) -> list[dict[str, Any]]:
        """The entries of the stage list ``kind`` (one of :data:`STAGE_KINDS`)."""
        if kind not in STAGE_KINDS:
            raise ValueError(f"unknown stage list {kind!r}; choose one of {STAGE_KINDS}")
        return _mappings(self.raw.get(kind))

    @property
    def retrievers(self) -> list[dict[str, Any]]:
        return self.stages("retrievers")

    @property
    def fusions(self) -> list[dict[str, Any]]:
        return self.stages("fusions")

    @property
    def rerankers(self) -> list[dict[str, Any]]:
        return self.stages("rerankers")

    @property
    def retriever_labels(self) -> list[str]:
        return [stage_label(s) for s in self.retrievers]

    @property
    def fusion_labels(self) -> list[str]:
        return [stage_label(s) for s in self.fusions]

    @property
    def reranker_labels(self) -> list[str]:
        return [stage_label(s) for s in self.rerankers]

    @property
    def stage_labels(self) -> list[str]:
        """Every stage's label in pipeline order: retrievers, fusions, rerankers."""
        return [stage_label(s) for kind in STAGE_KINDS for s in self.stages(kind)]

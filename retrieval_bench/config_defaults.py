"""The numeric defaults of a benchmark config that more than the config reads.

:class:`retrieval_bench.config.BenchmarkConfig` takes its field defaults from here,
and so does :class:`retrieval_bench.store.stored_config.StoredConfig`, which reads
stored runs' configs (the store sits below the config: docs/architecture.md#layers),
so a run stored without a key reads as the config would have filled it in. The
``metrics:`` defaults are :class:`retrieval_bench.dataset_spec.MetricsSpec`'s own.

Foundation layer: imports nothing of the toolkit.
"""

from __future__ import annotations

__all__ = ["CANDIDATES", "TABLE_K"]

TABLE_K = 10
"""``table_k``: the cut-off of the printed per-stage table."""
CANDIDATES = 50
"""``candidates``: how many chunks each retriever and fusion returns per query."""

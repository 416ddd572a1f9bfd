"""Comparing stored runs: paired per-query tests, the per-stage table's paired
columns and the regression gate (docs/metrics.md#paired-columns-of-the-per-stage-table)."""

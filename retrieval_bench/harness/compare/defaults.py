"""Defaults of ``rbench compare`` shared by the CLI and the web UI.

A module of its own, free of heavy imports, so that building the CLI's argument
parser does not load the statistics code; :mod:`retrieval_bench.harness.compare.runs`
re-exports it.
"""

from __future__ import annotations

DEFAULT_RESAMPLES = 10000
"""Resamples of the randomisation and bootstrap tests and of the bootstrap CI,
unless a caller asks for others: the one default of ``rbench compare`` and of
the web UI's comparison page, so both give the same p-values for the same pair."""

"""Compatibility: the contract now lives in :mod:`retrieval_bench.contracts`; import it there."""

from retrieval_bench.contracts.stage import (
    Ranks as Ranks,
)
from retrieval_bench.contracts.stage import (
    Stage as Stage,
)

"""Compatibility: the contract now lives in :mod:`retrieval_bench.contracts`; import it there."""

from retrieval_bench.contracts.reranker import (
    Reranker as Reranker,
)

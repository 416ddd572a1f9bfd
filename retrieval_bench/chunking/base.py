"""Compatibility: the contract now lives in :mod:`retrieval_bench.contracts`; import it there."""

from retrieval_bench.contracts.chunker import (
    Chunker as Chunker,
)
from retrieval_bench.contracts.chunker import (
    chunk_id as chunk_id,
)
from retrieval_bench.contracts.chunker import (
    chunk_tree as chunk_tree,
)

"""Compatibility: the contract now lives in :mod:`retrieval_bench.contracts`; import it there."""

from retrieval_bench.contracts.registry import (
    CHUNKERS as CHUNKERS,
)
from retrieval_bench.contracts.registry import (
    FUSIONS as FUSIONS,
)
from retrieval_bench.contracts.registry import (
    METRICS as METRICS,
)
from retrieval_bench.contracts.registry import (
    REGISTRIES as REGISTRIES,
)
from retrieval_bench.contracts.registry import (
    RERANKERS as RERANKERS,
)
from retrieval_bench.contracts.registry import (
    RETRIEVERS as RETRIEVERS,
)
from retrieval_bench.contracts.registry import (
    Registry as Registry,
)
from retrieval_bench.contracts.registry import (
    create as create,
)
from retrieval_bench.contracts.registry import (
    get as get,
)
from retrieval_bench.contracts.registry import (
    names as names,
)
from retrieval_bench.contracts.registry import (
    register as register,
)
from retrieval_bench.contracts.registry import (
    registry_for as registry_for,
)

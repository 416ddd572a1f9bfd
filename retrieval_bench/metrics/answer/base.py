"""Compatibility: the contract now lives in :mod:`retrieval_bench.contracts`; import it there."""

from retrieval_bench.contracts.answer_metric import (
    MetricBase as MetricBase,
)
from retrieval_bench.contracts.answer_metric import (
    Sample as Sample,
)
from retrieval_bench.contracts.answer_metric import (
    Score as Score,
)

"""The contracts every stage and measure is written against, below every implementation.

The stage bases (:mod:`.stage`; the kinds in :mod:`.chunker`, :mod:`.retriever`,
:mod:`.fusion`, :mod:`.reranker`, :mod:`.answer_metric`), what a stage is built
from (:mod:`.params`: its typed ``Params`` and the harness's services) and the
name → class registries (:mod:`.registry`). Nothing here imports an
implementation; the built-in stages are named in one place,
:mod:`retrieval_bench.builtin_stages` (docs/architecture.md#layers).
"""

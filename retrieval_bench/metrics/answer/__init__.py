"""Answer metrics: one ``Metric`` interface (``base``), the evaluator that runs
many over a batch, the registry factory and builder, and the metric families
(``text``, ``judge``, ``factuality``, ``grounded``, ``code_similarity``,
``composite``). Definitions: ``docs/metrics.md``.
"""

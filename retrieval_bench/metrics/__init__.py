"""Measuring: three subpackages, one per question.

* :mod:`retrieval_bench.metrics.retrieval` — did a stage find the right files,
  chunks and lines (P/R/F1@k, Acc@k, MRR, nDCG, token budgets, Lost@k)?
* :mod:`retrieval_bench.metrics.answer` — is an answer built on the retrieved
  code good (text overlap, LLM judges, factuality, grounded references, code
  similarity), through one ``Metric`` interface and evaluator?
* :mod:`retrieval_bench.metrics.stats` — is one run really better than another
  (paired tests, bootstrap intervals, Holm, effect sizes)?

Definitions and the reference implementations each is checked against:
``docs/metrics.md``.
"""

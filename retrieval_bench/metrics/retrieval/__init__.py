"""Retrieval metrics: a stage's chunk run scored against file and span gold.

``scoring`` maps chunks to files and lines and computes every per-stage
measure (``evaluate_stage``); ``ranking`` holds the trec_eval-equivalent
ranking measures on judged lists; ``spans`` the line-level gold. Definitions:
``docs/metrics.md``.
"""

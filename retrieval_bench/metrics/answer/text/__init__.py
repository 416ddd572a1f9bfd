"""Text metrics (docs/metrics.md#text-metrics): exact match, token F1, BLEU, ROUGE-1/2/L/Lsum.

Each is a :class:`~retrieval_bench.contracts.answer_metric.MetricBase` registered under
the ``metrics`` kind (``exact_match``, ``token_f1``, ``bleu``, ``rouge1``,
``rouge2``, ``rougeL``, ``rougeLsum``) whose options are its class's ``Params``, so a
config entry such as ``{"name": "bleu", "smoothing": "floor"}`` maps onto it. BLEU
agrees with sacrebleu and ROUGE with rouge-score to 1e-9 on the test corpus
(``tests/unit/metrics/answer/text``; ``benchmarks/agreement/text_metrics.py``).
"""

from __future__ import annotations

from retrieval_bench.metrics.answer.text.bleu import BLEU, BleuStatistics, bleu_from_statistics
from retrieval_bench.metrics.answer.text.exact_match import ExactMatch
from retrieval_bench.metrics.answer.text.normalize import TextNormalizer, normalize_answer
from retrieval_bench.metrics.answer.text.rouge import (
    Rouge,
    Rouge1,
    Rouge2,
    RougeL,
    RougeLsum,
    RougeScore,
    rouge1,
    rouge2,
    rouge_l,
    rouge_lsum,
    rouge_tokens,
)
from retrieval_bench.metrics.answer.text.token_f1 import TokenF1, token_prf
from retrieval_bench.metrics.answer.text.tokenize_13a import tokenize_13a

__all__ = [
    "BLEU",
    "BleuStatistics",
    "ExactMatch",
    "Rouge",
    "Rouge1",
    "Rouge2",
    "RougeL",
    "RougeLsum",
    "RougeScore",
    "TextNormalizer",
    "TokenF1",
    "bleu_from_statistics",
    "normalize_answer",
    "rouge1",
    "rouge2",
    "rouge_l",
    "rouge_lsum",
    "rouge_tokens",
    "token_prf",
    "tokenize_13a",
]

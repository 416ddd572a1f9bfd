"""Claim-based factuality metrics (docs/metrics.md#factuality).

Helpers (each a class taking ``llm`` with a batch method that sends all its
calls through one ``llm.chat_many``):

* :class:`ClaimExtractor` — a text → atomic claims (one call per text);
* :class:`EntailmentAnalyzer` — does text t entail / contradict / say nothing
  about claim s (two YES/NO calls per pair, aggregated; :class:`Relation`);
* :class:`Informationless` — is a text only pleasantries / questions back.

Metrics (registered under the names in brackets):

* :class:`ClaimsFC` (``claims_fc``) — claim precision / recall / F1 of the
  answer against the expected answer;
* :class:`RubricsFC` (``rubrics_fc``) — one-call relation (equivalent,
  implied subset/superset, contradiction, independent) mapped to a score;
* :class:`Faithfulness` (``faithfulness``) — share of the answer's claims
  entailed by at least one retrieved source;
* :class:`ContextRelevancy` (``context_relevancy``) — share of sources judged
  necessary/useful for the answer.

Prompts live in ``prompts/*.txt``; every helper and metric accepts a file of
its own in their place.
"""

from retrieval_bench.metrics.answer.factuality.claims import ClaimExtractor, Claims, parse_claims
from retrieval_bench.metrics.answer.factuality.claims_fc import ClaimsFC
from retrieval_bench.metrics.answer.factuality.context_relevancy import ContextRelevancy
from retrieval_bench.metrics.answer.factuality.entailment import (
    Entailment,
    EntailmentAnalyzer,
    Relation,
    combine,
)
from retrieval_bench.metrics.answer.factuality.faithfulness import Faithfulness
from retrieval_bench.metrics.answer.factuality.informationless import (
    Informationless,
    InformationlessVerdict,
)
from retrieval_bench.metrics.answer.factuality.rubrics_fc import RubricsFC, parse_rubric_label

__all__ = [
    "ClaimExtractor",
    "Claims",
    "ClaimsFC",
    "ContextRelevancy",
    "Entailment",
    "EntailmentAnalyzer",
    "Faithfulness",
    "Informationless",
    "InformationlessVerdict",
    "Relation",
    "RubricsFC",
    "combine",
    "parse_claims",
    "parse_rubric_label",
]

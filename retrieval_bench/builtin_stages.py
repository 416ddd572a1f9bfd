"""Every built-in stage, by name: the one place they are registered.

Each function returns one kind's ``name → class`` table; its registry calls it
on its first lookup (:class:`~retrieval_bench.contracts.registry.Registry`),
so ``import retrieval_bench`` imports no stage, and looking up a retriever
imports the retrievers only. Adding a built-in stage is one module (the class,
with its ``Params``) and one line here; a plugin registers itself instead
(``@RETRIEVERS.register(name)`` or an entry point: docs/extending.md).
"""

from __future__ import annotations


def chunkers() -> dict[str, type]:
    from retrieval_bench.chunking.ast import AstChunker
    from retrieval_bench.chunking.truncate import TruncateChunker
    from retrieval_bench.chunking.window import WindowChunker

    return {"truncate": TruncateChunker, "window": WindowChunker, "ast": AstChunker}


def retrievers() -> dict[str, type]:
    from retrieval_bench.retrieval.adapter import AdaptedDenseRetriever
    from retrieval_bench.retrieval.bm25 import BM25Retriever
    from retrieval_bench.retrieval.dense import DenseRetriever
    from retrieval_bench.retrieval.exact import ExactRetriever
    from retrieval_bench.retrieval.external import ExternalRun
    from retrieval_bench.retrieval.file_bm25 import FileBM25Retriever
    from retrieval_bench.retrieval.fuzzy import FuzzyRetriever
    from retrieval_bench.retrieval.history import HistoryRetriever
    from retrieval_bench.retrieval.hyde import HydeRetriever

    return {
        "dense": DenseRetriever,
        "bm25": BM25Retriever,
        "bm25-files": FileBM25Retriever,
        "exact": ExactRetriever,
        "fuzzy": FuzzyRetriever,
        "hyde": HydeRetriever,
        "dense-adapted": AdaptedDenseRetriever,
        "external": ExternalRun,
        "history": HistoryRetriever,
    }


def fusions() -> dict[str, type]:
    from retrieval_bench.rank_fusion.concat import ConcatFusion
    from retrieval_bench.rank_fusion.function_ranker import FunctionRanker
    from retrieval_bench.rank_fusion.hierarchical import HierarchicalFusion
    from retrieval_bench.rank_fusion.learned import LearnedFusion
    from retrieval_bench.rank_fusion.ltr import LTRFusion
    from retrieval_bench.rank_fusion.normsum import NormSumFusion
    from retrieval_bench.rank_fusion.optimize import OptimizedFusion
    from retrieval_bench.rank_fusion.rrf import RRFFusion
    from retrieval_bench.rank_fusion.vote import VoteFusion

    return {
        "concat": ConcatFusion,
        "normsum": NormSumFusion,
        "rrf": RRFFusion,
        "vote": VoteFusion,
        "learned": LearnedFusion,
        "optimized": OptimizedFusion,
        "ltr": LTRFusion,
        "hierarchical": HierarchicalFusion,
        "function-ranker": FunctionRanker,
    }


def rerankers() -> dict[str, type]:
    from retrieval_bench.reranking.code_graph import CodeGraphReranker
    from retrieval_bench.reranking.cross_encoder import CrossEncoderReranker
    from retrieval_bench.reranking.file_size import FileSizeReranker
    from retrieval_bench.reranking.llm import (
        LLMLogprobReranker,
        LLMSelectReranker,
        LLMYesNoReranker,
    )

    return {
        "llm-yesno": LLMYesNoReranker,
        "llm-logprob": LLMLogprobReranker,
        "llm-select": LLMSelectReranker,
        "cross-encoder": CrossEncoderReranker,
        "code-graph": CodeGraphReranker,
        "file-size": FileSizeReranker,
    }


def metrics() -> dict[str, type]:
    from retrieval_bench.metrics.answer.code_similarity import CosineSimilarity, CrossSimilarity
    from retrieval_bench.metrics.answer.composite import Composite
    from retrieval_bench.metrics.answer.factuality.claims_fc import ClaimsFC
    from retrieval_bench.metrics.answer.factuality.context_relevancy import ContextRelevancy
    from retrieval_bench.metrics.answer.factuality.faithfulness import Faithfulness
    from retrieval_bench.metrics.answer.factuality.rubrics_fc import RubricsFC
    from retrieval_bench.metrics.answer.grounded import GroundedReferences
    from retrieval_bench.metrics.answer.judge import LLMJudge
    from retrieval_bench.metrics.answer.text.bleu import BLEU
    from retrieval_bench.metrics.answer.text.exact_match import ExactMatch
    from retrieval_bench.metrics.answer.text.rouge import Rouge1, Rouge2, RougeL, RougeLsum
    from retrieval_bench.metrics.answer.text.token_f1 import TokenF1

    return {
        "exact_match": ExactMatch,
        "token_f1": TokenF1,
        "bleu": BLEU,
        "rouge1": Rouge1,
        "rouge2": Rouge2,
        "rougeL": RougeL,
        "rougeLsum": RougeLsum,
        "llm_judge": LLMJudge,
        "composite": Composite,
        "grounded_refs": GroundedReferences,
        "cosine": CosineSimilarity,
        "cross_similarity": CrossSimilarity,
        "claims_fc": ClaimsFC,
        "rubrics_fc": RubricsFC,
        "faithfulness": Faithfulness,
        "context_relevancy": ContextRelevancy,
    }

"""LLM rerankers: ``llm-select``, ``llm-yesno`` and ``llm-logprob`` (docs/stages.md#rerankers).

The reranking ladder, after a high-recall retrieval stage (about 50
candidates cut to about 10):

- ``llm-select`` (naive): show the candidates to the model in groups of
  ``group_size`` and ask for the numbers of the best K of each group.
- ``llm-yesno`` (basic): one call per candidate, in parallel, asking for a
  single-token Yes/No answer. Score 1.0 for "yes", 0.0 for "no".
- ``llm-logprob`` (better): the same call with first-token logprobs; the
  score is P(Yes) renormalised over the Yes/No entries only::

      P(Yes) = Σ_{t ∈ yes} exp(lp_t) / (Σ_{t ∈ yes} exp(lp_t) + Σ_{t ∈ no} exp(lp_t))

  where a token belongs to ``yes`` (``no``) when, stripped of spaces and
  punctuation and casefolded, it reads "yes" ("no") — so "Yes", " yes" and
  "YES" add up. Other tokens ("The" is often the top one for small models)
  are ignored. Only Yes variants present → 1.0, only No → 0.0; neither →
  the answer text decides (yes 1.0, no 0.0, anything else 0.5) and the
  candidate is counted in ``no_logprobs``.

All calls of all queries go through one ``llm.chat_many`` so the client's
concurrency applies (each snippet is asked about in parallel). The
prompts live in ``prompts/*.txt`` beside this module.

Scores and order. The returned :class:`~retrieval_bench.types.Run` holds the
reranker's own score (1/0, P(Yes), selected 1/0), so a threshold can be swept
over it (:mod:`retrieval_bench.reranking.threshold`); equal scores keep their
input order (:func:`~retrieval_bench.reranking.common.stable_scores`).

Failures (docs/architecture.md#bad-input-and-failures). A call that fails (an
``LLMError`` from ``chat_many``) scores its candidates 0 and is noted in
``artifacts`` and ``failed_calls``; the rest of the query still ranks. When
every call of a query fails, or the query text is empty, the query keeps no
candidates and is reported in ``failures`` (query id → reason). Counters
describe the last ``rerank`` call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from pydantic import ValidationInfo, field_validator

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.llm.yes_no import p_yes, parse_yes_no
from retrieval_bench.reranking.common import (
    gather_candidates,
    load_prompt,
    positive_ints,
    stable_scores,
    truncate_snippet,
)
from retrieval_bench.types import Chunk, Run

__all__ = [
    "LLMLogprobReranker",
    "LLMSelectReranker",
    "LLMYesNoReranker",
    "parse_numbers",
]

_NUMBER = re.compile(r"\d+")


def parse_numbers(text: str, n: int, limit: int | None = None) -> list[int]:
    """1-based candidate numbers in ``text``, in the order given; out-of-range
    and repeated numbers are ignored; at most ``limit`` of them."""
    out: list[int] = []
    for m in _NUMBER.finditer(text):
        v = int(m.group(0))
        if 1 <= v <= n and v not in out:
            out.append(v)
            if limit is not None and len(out) >= limit:
                break
    return out


@dataclass
class _Job:
    """One model call: the candidates it covers and its request."""

    query_id: str
    candidates: list[tuple[int, Chunk]]
    """(0-based input rank, chunk)."""
    request: ChatRequest
    group: int = 0
    want: int = 1
    """How many numbers ``llm-select`` asked for."""


@dataclass
class _Scored:
    chunk: Chunk
    rank: int
    score: float
    priority: tuple[int, ...]
    """Order among equal scores (input rank, unless the reranker says otherwise)."""
    answer: str
    extra: dict[str, Any]


class _LLMReranker(Reranker):
    """Shared driver: collect candidates, one ``chat_many`` for all, score, order.

    After ``rerank``: ``failures`` (query id → reason, for queries that kept no
    candidates), ``artifacts`` (query id → one record per candidate, best
    first: the per-query drill-down), ``unparsed`` (answers that were neither a
    usable Yes/No nor a list of numbers), ``failed_calls`` (calls that failed;
    their candidates scored 0), ``unknown_chunks`` (candidate ids absent from
    the corpus, dropped before asking).
    """

    name = "llm"
    needs_llm = True
    top_logprobs: int | None = None

    class Params(StageParams):
        """The parameters every LLM reranker shares (the subclasses' docs). Each count
        (an ``int`` parameter) must be a positive integer (or None where allowed)."""

        stage: ClassVar[str] = "llm"
        """The stage named in a bad value's message."""

        max_candidates: int = 50
        snippet_chars: int = 1500
        threshold: float | None = None
        max_tokens: int = 3
        temperature: int | float = 0.0
        """``int | float``: an integer stays one, as the request (and its cache key) had it."""

        @field_validator("*", mode="before")
        @classmethod
        def _positive(cls, value: Any, info: ValidationInfo) -> Any:
            key = str(info.field_name)
            count = cls.model_fields[key].annotation in (int, int | None)
            if count and isinstance(value, int | float):  # as given: True is no count
                try:
                    positive_ints(cls.stage, **{key: cast("int", value)})
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
            return value

    params: _LLMReranker.Params

    def __init__(
        self,
        params: _LLMReranker.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str | None = None,
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.llm = llm
        self.max_candidates = p.max_candidates
        self.snippet_chars = p.snippet_chars
        self.threshold = p.threshold
        self.max_tokens = p.max_tokens
        self.temperature = p.temperature
        if name is not None:
            self.name = name
        super().__init__()
        self._reset()

    def _client(self) -> LLM:
        if self.llm is None:
            raise ConfigError(f"{self.name}: no LLM client given (pass llm=...)")
        return self.llm

    def _reset(self) -> None:
        self.failures: dict[str, str] = {}
        self.artifacts: dict[str, list[dict[str, Any]]] = {}
        self.unparsed = 0
        self.failed_calls = 0
        self.unknown_chunks = 0

    def _fields(self, chunk: Chunk) -> dict[str, str]:
        return {
            "path": chunk.path,
            "lines": f"{chunk.start_line}-{chunk.end_line}",
            "snippet": truncate_snippet(chunk.text, self.snippet_chars),
        }

    def _ask(self, prompt: str, **fields: Any) -> ChatRequest:
        """The request of prompt file ``prompt`` with its user template filled."""
        p = load_prompt(prompt)
        return chat_request(
            p["user"].format_map(fields),
            system=p.get("system"),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_logprobs=self.top_logprobs,
        )

    def _jobs(self, qid: str, query: str, cands: list[tuple[int, Chunk]], k: int) -> list[_Job]:
        raise NotImplementedError

    def _score(self, job: _Job, reply: Completion) -> list[_Scored]:
        raise NotImplementedError

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Re-score each query's top ``max_candidates`` and keep the best ``k``
        (those scoring at least ``threshold`` when one is set)."""
        self._reset()
        out, todo, self.failures, self.unknown_chunks = gather_candidates(
            queries, run, corpus, self.max_candidates
        )
        jobs: list[_Job] = []
        for qid, query, chunks in todo:
            jobs += self._jobs(qid, query, list(enumerate(chunks)), k)
        replies = self._client().chat_many([j.request for j in jobs]) if jobs else []
        by_query: dict[str, list[tuple[_Job, Completion | LLMError]]] = {}
        for job, reply in zip(jobs, replies, strict=True):
            by_query.setdefault(job.query_id, []).append((job, reply))
        for qid, pairs in by_query.items():
            scored: list[_Scored] = []
            for job, reply in pairs:
                if isinstance(reply, LLMError):
                    self.failed_calls += 1
                    scored += [
                        _Scored(c, r, 0.0, (r,), "", {"error": str(reply)})
                        for r, c in job.candidates
                    ]
                else:
                    scored += self._score(job, reply)
            errors = [r for _, r in pairs if isinstance(r, LLMError)]
            scored.sort(key=lambda s: (-s.score, s.priority))
            if len(errors) == len(pairs):
                self.failures[qid] = f"all {len(pairs)} model calls failed: {errors[0]}"
            else:
                kept = [s for s in scored if self.threshold is None or s.score >= self.threshold]
                out[qid] = stable_scores([(s.chunk.id, s.score) for s in kept[:k]])
            self.artifacts[qid] = [
                {
                    "chunk_id": s.chunk.id,
                    "path": s.chunk.path,
                    "input_rank": s.rank + 1,
                    "answer": s.answer,
                    "score": s.score,
                    "kept": s.chunk.id in out[qid],
                    **s.extra,
                }
                for s in scored
            ]
        return Run(self.name, out)


class LLMYesNoReranker(_LLMReranker):
    """One Yes/No call per candidate (the "basic" rung); score 1.0 yes, 0.0 no.

    Parameters: ``llm``; ``max_candidates`` (50) of the input run are asked
    about; ``snippet_chars`` (1500) of each chunk are shown; ``threshold``
    (None) drops candidates scoring below it; ``max_tokens`` (3);
    ``temperature`` (0.0); ``name`` of the output run.
    """

    name = "llm-yesno"

    class Params(_LLMReranker.Params):
        stage: ClassVar[str] = "llm-yesno"

    def _jobs(self, qid: str, query: str, cands: list[tuple[int, Chunk]], k: int) -> list[_Job]:
        return [
            _Job(qid, [(r, c)], self._ask("yesno", query=query, **self._fields(c)))
            for r, c in cands
        ]

    def _answer_score(self, reply: Completion) -> tuple[float, dict[str, Any]]:
        value = parse_yes_no(reply.text)
        if value is None:
            self.unparsed += 1
            return 0.0, {"unparsed": True}
        return value, {}

    def _score(self, job: _Job, reply: Completion) -> list[_Scored]:
        ((rank, chunk),) = job.candidates
        score, extra = self._answer_score(reply)
        return [_Scored(chunk, rank, score, (rank,), reply.text, extra)]


class LLMLogprobReranker(LLMYesNoReranker):
    """The Yes/No call with first-token logprobs (the "better" rung); score = P(Yes).

    Parameters as :class:`LLMYesNoReranker`, plus ``top_logprobs`` (5): how
    many alternatives of the first token to ask for. ``max_tokens`` defaults
    to 1: only the first token is read.
    """

    name = "llm-logprob"

    class Params(LLMYesNoReranker.Params):
        stage: ClassVar[str] = "llm-logprob"

        max_tokens: int = 1
        top_logprobs: int = 5

    params: LLMLogprobReranker.Params

    def __init__(self, params: LLMLogprobReranker.Params | None = None, /, **values: Any) -> None:
        """As :class:`LLMYesNoReranker`'s (``llm``, ``name`` and the parameters)."""
        super().__init__(params, **values)
        self.top_logprobs = self.params.top_logprobs

    def _reset(self) -> None:
        super()._reset()
        self.no_logprobs = 0  # answers without Yes/No among the first token's top logprobs

    def _answer_score(self, reply: Completion) -> tuple[float, dict[str, Any]]:
        top: dict[str, float] = {}
        if reply.logprobs:
            first = reply.logprobs[0]
            top = {first.token: first.logprob, **first.top}
        p = p_yes(top)
        if p is not None:
            return p, {"top_logprobs": top}
        self.no_logprobs += 1
        value = parse_yes_no(reply.text)
        if value is None:
            self.unparsed += 1
            return 0.5, {"no_logprobs": True, "unparsed": True, "top_logprobs": top}
        return value, {"no_logprobs": True, "top_logprobs": top}


class LLMSelectReranker(_LLMReranker):
    """Candidates in groups; the model names the best of each (the "naive" rung).

    Parameters as :class:`LLMYesNoReranker` (``snippet_chars`` defaults to 400
    so that a group fits a small model's context, ``max_tokens`` to 32), plus
    ``group_size`` (10) and ``k_per_group``: how many numbers to ask for per
    group; None → ceil(k / number of groups), so that about k are selected.

    Score: 1.0 for a selected candidate, 0.0 for the rest. Selected ones come
    first: every group's first pick (groups in input order), then every
    group's second pick, and so on; the rest follow in input order. A group
    whose answer holds no usable number is counted in ``unparsed`` and keeps
    its input order among the unselected.
    """

    name = "llm-select"

    class Params(_LLMReranker.Params):
        stage: ClassVar[str] = "llm-select"

        snippet_chars: int = 400
        max_tokens: int = 32
        group_size: int = 10
        k_per_group: int | None = None

    params: LLMSelectReranker.Params

    def __init__(self, params: LLMSelectReranker.Params | None = None, /, **values: Any) -> None:
        """As :class:`LLMYesNoReranker`'s (``llm``, ``name`` and the parameters)."""
        super().__init__(params, **values)
        self.group_size = self.params.group_size
        self.k_per_group = self.params.k_per_group

    def _jobs(self, qid: str, query: str, cands: list[tuple[int, Chunk]], k: int) -> list[_Job]:
        candidate = load_prompt("select")["candidate"]
        groups = [cands[i : i + self.group_size] for i in range(0, len(cands), self.group_size)]
        per_group = self.k_per_group or max(1, math.ceil(k / len(groups)))
        jobs = []
        for g, group in enumerate(groups):
            want = min(per_group, len(group))
            blocks = "\n\n".join(
                candidate.format_map({"number": i, **self._fields(c)})
                for i, (_, c) in enumerate(group, start=1)
            )
            request = self._ask("select", query=query, candidates=blocks, k=want, n=len(group))
            jobs.append(_Job(qid, group, request, g, want))
        return jobs

    def _score(self, job: _Job, reply: Completion) -> list[_Scored]:
        n = len(job.candidates)
        picks = parse_numbers(reply.text, n, job.want)
        if not picks:
            self.unparsed += 1
        pos = {number: i for i, number in enumerate(picks)}
        out = []
        for number, (rank, chunk) in enumerate(job.candidates, start=1):
            extra: dict[str, Any] = {"group": job.group + 1, "pick": None}
            if number in pos:
                extra["pick"] = pos[number] + 1
                out.append(_Scored(chunk, rank, 1.0, (pos[number], job.group), reply.text, extra))
            else:
                extra["unparsed"] = not picks
                out.append(_Scored(chunk, rank, 0.0, (rank,), reply.text, extra))
        return out

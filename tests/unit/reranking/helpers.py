"""Small corpora and scripts for reranker tests (no model, no network)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from retrieval_bench.corpus import Corpus
from retrieval_bench.llm.base import ChatRequest, Completion, LLMError
from retrieval_bench.types import Chunk, Run
from tests.fakes.llm import Reply, ScriptedLLM, last_user

MARK = re.compile(r"MARK-(\w+)")


def chunk(cid: str, path: str | None = None, text: str | None = None) -> Chunk:
    """A chunk whose text carries ``MARK-<id>`` so a script can tell who is asked."""
    body = text if text is not None else f"def f_{cid}():\n    return 'MARK-{cid}'\n"
    return Chunk(
        cid, path or f"src/{cid}.py", 1, body.count("\n") + 1, "python", "function", None, body
    )


def corpus_of(chunks: Sequence[Chunk]) -> Corpus:
    return Corpus(Path("."), list(chunks))


def input_run(lists: dict[str, list[str]]) -> Run:
    """Candidates in the given order (scores 1/rank)."""
    return Run.from_lists("fused", lists)


def marks(request: ChatRequest) -> list[str]:
    """Chunk ids whose snippets appear in the request, in prompt order."""
    return MARK.findall(last_user(request))


def by_mark(answers: Mapping[str, Reply], default: Reply = "No") -> Callable[[ChatRequest], Reply]:
    """A yes/no script answering per candidate id."""

    def script(request: ChatRequest) -> Reply:
        (cid,) = marks(request)
        return answers.get(cid, default)

    return script


class CountingLLM(ScriptedLLM):
    """A ScriptedLLM that also counts ``chat_many`` batches."""

    def __init__(self, script: Callable[[ChatRequest], Reply] | str) -> None:
        super().__init__(script)
        self.batches: list[int] = []

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        self.batches.append(len(requests))
        return super().chat_many(requests)

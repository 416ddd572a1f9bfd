"""The answering stage: question + final chunks → an answer with checked references.

:class:`Answerer` prompts the model with one of the rungs of
:mod:`retrieval_bench.answering.prompts` (``bare``, ``instructions``,
``where_to_look``, ``file_tree``; docs/stages.md#answerer), the top ``k`` chunks
of a question (best first, within ``max_context_tokens``) and the question.
All questions go through one ``llm.chat_many``, so the client's concurrency
and cache apply.

File references are made clickable links to the file itself: every answer's
file references are extracted
(:func:`retrieval_bench.answering.references.extract_references`),
resolved against the repository's file list (the corpus' files;
:func:`~retrieval_bench.answering.paths.resolve_path`) and flagged:
``exists`` (the file is in the repository), ``lines_exist`` (the cited line
range lies within the file) and ``in_context`` (the file was shown to the
model: a reference to anything else discusses unseen code).
:func:`linked_text` turns the references into Markdown links.

Failures (docs/architecture.md#bad-input-and-failures): a call that fails (an
``LLMError`` from ``chat_many``), or a question with no text, gives an
:class:`AnswerFailure` carrying the error; the other questions are answered.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from retrieval_bench.answering.paths import PathIndex, match_path
from retrieval_bench.answering.prompts import (
    RUNGS,
    Context,
    build_context,
    render_prompt,
    tree_of,
)
from retrieval_bench.answering.references import extract_references
from retrieval_bench.chunking.tokenizer import DEFAULT_TOKENIZER, Tokenizer, get_tokenizer
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.types import Chunk

__all__ = [
    "Answer",
    "AnswerFailure",
    "AnswerOutcome",
    "Answerer",
    "CheckedReference",
    "check_references",
    "linked_text",
    "repository_files",
]


@dataclass(frozen=True)
class CheckedReference:
    """A code reference found in an answer, checked against the repository."""

    text: str
    """The reference as written in the answer."""
    path: str | None
    """The cited path (None for a bare symbol such as ``verify_token()``)."""
    start_line: int | None
    end_line: int | None
    symbol: str | None
    offset: int
    """Character offset of ``text`` in the answer."""
    resolved: str | None
    """The one repository path it refers to (None: no file, or several match)."""
    exists: bool | None
    """Some repository file matches the cited path (None: no path cited)."""
    candidates: int
    """How many repository files match the cited path (>1: ambiguous)."""
    lines_exist: bool | None
    """The cited line range lies within the resolved file (None: no lines, or no file)."""
    in_context: bool
    """A matching file was among the snippets shown to the model."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class Answer:
    """The model's answer to one question and what it was given."""

    query_id: str
    text: str
    rung: str
    chunk_ids: tuple[str, ...]
    """The chunks shown, best first."""
    references: tuple[CheckedReference, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    dropped_chunk_ids: tuple[str, ...] = ()
    """Top-k chunks left out because they did not fit ``max_context_tokens``."""
    context_tokens: int = 0
    truncated: bool = False
    """The best chunk alone exceeded the budget and was cut."""
    finish_reason: str | None = None
    failed = False

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "references"}
        out["chunk_ids"] = list(self.chunk_ids)
        out["dropped_chunk_ids"] = list(self.dropped_chunk_ids)
        out["references"] = [r.to_dict() for r in self.references]
        return out


@dataclass(frozen=True)
class AnswerFailure:
    """A question that got no answer, and why."""

    query_id: str
    error: str
    rung: str
    chunk_ids: tuple[str, ...] = ()
    failed = True

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "chunk_ids": list(self.chunk_ids)}


AnswerOutcome = Answer | AnswerFailure


def repository_files(corpus: Corpus) -> set[str]:
    """Every file of the snapshot the corpus knows: chunked ones and skipped ones."""
    return set(corpus.paths) | set(corpus.skipped)


class _LineCounts:
    """Line counts of repository files, read on first need."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._counts: dict[str, int | None] = {}

    def __call__(self, path: str) -> int | None:
        if path not in self._counts:
            try:
                data = (self.root / path).read_bytes()
            except OSError:
                self._counts[path] = None
            else:
                self._counts[path] = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        return self._counts[path]


def _lines_exist(start: int | None, end: int | None, n_lines: int | None) -> bool | None:
    if start is None or n_lines is None:
        return None
    last = end if end is not None else start
    return 1 <= start <= last <= n_lines


def check_references(
    text: str,
    files: Iterable[str] | PathIndex,
    shown: Collection[str] = (),
    root: Path | None = None,
) -> tuple[CheckedReference, ...]:
    """The code references of ``text``, each matched against ``files`` (repository
    paths, or a :class:`PathIndex` of them) and flagged; ``shown``: the files shown
    to the model; line ranges are checked when ``root`` (the snapshot's working
    tree) is given."""
    index = files if isinstance(files, PathIndex) else PathIndex(files)
    lines = _LineCounts(root) if root is not None else None
    out = []
    for ref in extract_references(text):
        found = match_path(ref, index) if ref.path is not None else None
        resolved = found.path if found is not None else None
        n_lines = lines(resolved) if lines is not None and resolved is not None else None
        out.append(
            CheckedReference(
                text=ref.text,
                path=ref.path,
                start_line=ref.start_line,
                end_line=ref.end_line,
                symbol=ref.symbol,
                offset=ref.offset,
                resolved=resolved,
                exists=found.found if found is not None else None,
                candidates=len(found.candidates) if found is not None else 0,
                lines_exist=_lines_exist(ref.start_line, ref.end_line, n_lines),
                in_context=found is not None and any(c in shown for c in found.candidates),
            )
        )
    return tuple(out)


def _link(root: Path, ref: CheckedReference) -> str:
    url = (root.resolve() / str(ref.resolved)).as_uri()
    if ref.start_line is not None:
        url += f"#L{ref.start_line}"
        if ref.end_line is not None and ref.end_line != ref.start_line:
            url += f"-L{ref.end_line}"
    return url


def linked_text(answer: Answer, root: Path) -> str:
    """The answer as Markdown with each reference to an existing file made a link
    (``file://`` URL of the file in the snapshot, ``#Lstart-Lend`` when cited)."""
    text = answer.text
    for ref in sorted(answer.references, key=lambda r: r.offset, reverse=True):
        end = ref.offset + len(ref.text)
        if ref.resolved is None or text[ref.offset : end] != ref.text:
            continue
        label = ref.text.replace("[", "\\[").replace("]", "\\]")
        text = f"{text[: ref.offset]}[{label}]({quote(_link(root, ref), safe=':/#')}){text[end:]}"
    return text


@dataclass(frozen=True)
class _Job:
    query_id: str
    context: Context
    request: ChatRequest | None
    error: str | None = None


class Answerer:
    """Answers questions from their retrieved chunks (docs/stages.md#answerer).

    Parameters: ``llm``; ``rung`` (one of :data:`RUNGS`); ``k`` (5) chunks of
    each question are offered; ``max_context_tokens`` (3000) caps the snippets
    (lower-ranked chunks that do not fit are dropped); ``max_tokens`` (384) and
    ``temperature`` (0.0) of the answer; ``tree_lines`` (40) caps the file
    tree of the ``file_tree`` rung; ``tokenizer``: the name of the tokenizer
    counting the context (default: the one that counted the corpus).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        rung: str = "instructions",
        k: int = 5,
        max_context_tokens: int = 3000,
        max_tokens: int = 384,
        temperature: float = 0.0,
        tree_lines: int = 40,
        tokenizer: str | None = None,
    ) -> None:
        if rung not in RUNGS:
            raise ConfigError(f"answerer: unknown rung {rung!r}; choose one of: {', '.join(RUNGS)}")
        for key, value in (
            ("k", k),
            ("max_context_tokens", max_context_tokens),
            ("max_tokens", max_tokens),
            ("tree_lines", tree_lines),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"answerer: {key} must be a positive integer, not {value!r}")
        if temperature < 0:
            raise ConfigError(f"answerer: temperature must be >= 0, not {temperature!r}")
        self.llm = llm
        self.rung = rung
        self.k = k
        self.max_context_tokens = max_context_tokens
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tree_lines = tree_lines
        self.tokenizer_name = tokenizer

    def _tokenizer(self, corpus: Corpus) -> Tokenizer:
        name = self.tokenizer_name or corpus.tokenizer or DEFAULT_TOKENIZER
        return get_tokenizer(name)

    def request(
        self, question: str, context: Context, files: set[str] | None = None
    ) -> ChatRequest:
        """The chat request of one question with its context (``files``: the
        repository's files, for the ``file_tree`` rung)."""
        tree_root, tree = ".", ""
        if self.rung == "file_tree":
            paths = [c.path for c in context.chunks]
            tree_root, tree = tree_of(paths, files or set(), max_lines=self.tree_lines)
        system, user = render_prompt(
            self.rung, question, context.text, tree_root=tree_root, tree=tree
        )
        return chat_request(
            user, system=system, temperature=self.temperature, max_tokens=self.max_tokens
        )

    def _jobs(
        self,
        questions: Mapping[str, str],
        chunks_per_question: Mapping[str, Sequence[Chunk]],
        corpus: Corpus,
        files: set[str],
    ) -> list[_Job]:
        tokenizer = self._tokenizer(corpus)
        jobs = []
        for qid, question in questions.items():
            chunks = list(chunks_per_question.get(qid, ()))[: self.k]
            context = build_context(chunks, tokenizer, self.max_context_tokens)
            if not (question or "").strip():
                jobs.append(_Job(qid, context, None, "empty question"))
            else:
                jobs.append(_Job(qid, context, self.request(question, context, files)))
        return jobs

    def _answer(self, job: _Job, reply: Completion, files: PathIndex, root: Path) -> Answer:
        shown = {c.path for c in job.context.chunks}
        return Answer(
            query_id=job.query_id,
            text=reply.text,
            rung=self.rung,
            chunk_ids=tuple(c.id for c in job.context.chunks),
            references=check_references(reply.text, files, shown, root),
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cached=reply.cached,
            dropped_chunk_ids=tuple(c.id for c in job.context.dropped),
            context_tokens=job.context.tokens,
            truncated=any(b.truncated for b in job.context.blocks),
            finish_reason=reply.finish_reason,
        )

    def answer_many(
        self,
        questions: Mapping[str, str],
        chunks_per_question: Mapping[str, Sequence[Chunk]],
        corpus: Corpus,
    ) -> list[AnswerOutcome]:
        """One outcome per question (in ``questions`` order): an :class:`Answer`,
        or an :class:`AnswerFailure` when its call failed or it has no text.

        ``chunks_per_question``: query id → its chunks, best first (the first
        ``k`` are offered; a question without chunks is answered without
        snippets). ``corpus``: the repository the chunks come from.
        """
        files = repository_files(corpus)
        jobs = self._jobs(questions, chunks_per_question, corpus, files)
        index = PathIndex(files)
        asked = [j for j in jobs if j.request is not None]
        replies = self.llm.chat_many([j.request for j in asked if j.request]) if asked else []
        by_query: dict[str, Completion | LLMError] = {
            j.query_id: r for j, r in zip(asked, replies, strict=True)
        }
        out: list[AnswerOutcome] = []
        for job in jobs:
            chunk_ids = tuple(c.id for c in job.context.chunks)
            reply = by_query.get(job.query_id)
            if job.error is not None or reply is None:
                out.append(
                    AnswerFailure(job.query_id, job.error or "no reply", self.rung, chunk_ids)
                )
            elif isinstance(reply, LLMError):
                error = f"LLM call failed: {reply}"
                out.append(AnswerFailure(job.query_id, error, self.rung, chunk_ids))
            else:
                out.append(self._answer(job, reply, index, corpus.root))
        return out

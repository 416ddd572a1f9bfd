"""LLM-proposed search keywords: the "llm" rung of the ``exact`` retriever.

Exact search (docs/stages.md#exact): ripgrep for words or phrases, optionally
asking the LLM to generate keywords to search for. :class:`LLMKeywordProvider`
is a ``question -> keywords`` callable, the ``keyword_provider`` hook of
:class:`~retrieval_bench.retrieval.exact.ExactRetriever`; with an ``llm``,
``registry.create("retrievers", "exact", terms="llm", llm=...)`` builds one.
It is the same move as HyDE (Gao et al. 2022, "Precise Zero-Shot Dense
Retrieval without Relevance Labels"): let the model guess what the answering
code contains, here as literal strings to grep for instead of a snippet to embed.

The reply is parsed leniently (:func:`parse_keywords`): one keyword per line
or comma-separated; bullets, numbering, quotes, backticks and bold marks are
stripped, a ``Keywords:`` label and ``name - explanation`` tails dropped,
sentences (more than 3 words; of a comma-separated line with one, only its
backticked parts are kept) skipped, stopwords and words under 3 characters
dropped (also from the ends of phrases), case-insensitive duplicates removed.
When the call fails or nothing survives parsing, the identifier terms of the
question (the ``identifiers`` rung) are used instead and the reason recorded
in :attr:`LLMKeywordProvider.failures`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from retrieval_bench.llm.base import LLM, ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.llm.prompt_files import read_prompt_text
from retrieval_bench.retrieval.query_terms import MIN_TERM_LEN, STOPWORDS, identifier_terms

_BULLET_RE = re.compile(r"^(?:[-*•+>]|\d+[.):]|\(\d+\)|[a-zA-Z][.)](?=\s))\s*")
_LABEL_RE = re.compile(r"^([^:`]{1,40}):\s+(.*)$")  # "Keywords: a, b" / "name: why"; not a::b
_LABEL_WORDS = ("keyword", "term", "identifier", "search", "word", "grep")
_TAIL_RE = re.compile(r"\s+(?:[-–—]|\(|//|#)\s*.*$")  # "name - explanation", "name (why)"
_SPLIT_RE = re.compile(r"[,;|]")
_BACKTICK_RE = re.compile(r"`([^`\n]+)`")
_EDGE_CHARS = "\"'`“”‘’*.,;:!?()[]{}<> \t"
MAX_PHRASE_WORDS = 3
PROMPTS_PACKAGE = "retrieval_bench.retrieval"
"""Where ``prompts/keywords.txt`` lives (package data)."""


def _word_ok(word: str) -> bool:
    return len(word) >= MIN_TERM_LEN and word.casefold() not in STOPWORDS


def _clean_item(item: str) -> list[str]:
    """Keyword candidates of one item: its backticked parts, or the item itself, cleaned."""
    quoted = _BACKTICK_RE.findall(item)
    if quoted:
        candidates = quoted
    else:
        item = item.replace("**", "").strip().strip(_EDGE_CHARS)
        candidates = [_TAIL_RE.sub("", item)]
    out = []
    for candidate in candidates:
        words = candidate.strip(_EDGE_CHARS).split()
        if not words or len(words) > MAX_PHRASE_WORDS:
            continue
        while words and not _word_ok(words[0].strip(_EDGE_CHARS)):
            words.pop(0)
        while words and not _word_ok(words[-1].strip(_EDGE_CHARS)):
            words.pop()
        keyword = " ".join(words).strip(_EDGE_CHARS)
        if keyword and _word_ok(keyword):
            out.append(keyword)
    return out


def parse_keywords(reply: str, max_keywords: int = 8) -> list[str]:
    """Keywords of a model reply, in reply order (see module doc for the rules)."""
    out: list[str] = []
    seen: set[str] = set()
    for raw_line in reply.splitlines():
        line = raw_line.strip()
        if not line or line.startswith(("```", "~~~")) or line.endswith(":"):
            continue  # blank, a fence, or a preamble such as "Here are the keywords:"
        line = _BULLET_RE.sub("", line).strip()
        label = _LABEL_RE.match(line)
        if label:
            head = label.group(1).casefold()
            line = label.group(2) if any(w in head for w in _LABEL_WORDS) else label.group(1)
        items = _SPLIT_RE.split(line)
        if len(items) > 1 and any(len(i.split()) > MAX_PHRASE_WORDS for i in items):
            items = _BACKTICK_RE.findall(line)  # prose with commas: only its `code` counts
        for item in items:
            for keyword in _clean_item(_BULLET_RE.sub("", item.strip())):
                if keyword.casefold() not in seen:
                    seen.add(keyword.casefold())
                    out.append(keyword)
                    if len(out) >= max_keywords:
                        return out
    return out


class LLMKeywordProvider:
    """``question -> keywords`` from a language model (module doc).

    Thread-safe; each distinct question is asked once and remembered.
    :meth:`prefetch` asks for many questions in one ``chat_many`` batch.

    Attributes:
        artifacts: question → ``{"keywords": [...], "reply": text | None,
            "fallback": None | "identifiers"}``.
        failures: question → why the identifier terms were used instead.
    """

    def __init__(
        self,
        llm: LLM,
        max_keywords: int = 8,
        *,
        max_tokens: int = 96,
        temperature: float = 0.0,
    ) -> None:
        if max_keywords < 1:
            raise ValueError(f"max_keywords must be at least 1, got {max_keywords}")
        self.llm = llm
        self.max_keywords = max_keywords
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.artifacts: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, str] = {}
        self._lock = threading.Lock()

    def request(self, question: str) -> ChatRequest:
        """The chat request for ``question``."""
        prompt = read_prompt_text(PROMPTS_PACKAGE, "keywords").format(
            max_keywords=self.max_keywords, query=question
        )
        return chat_request(prompt, temperature=self.temperature, max_tokens=self.max_tokens)

    def __call__(self, question: str) -> list[str]:
        """Keywords for ``question`` (the identifier terms when the model gives none)."""
        if not question.strip():
            return []
        with self._lock:
            known = self.artifacts.get(question)
        if known is not None:
            return list(known["keywords"])
        try:
            reply: Completion | LLMError = self.llm.chat(self.request(question))
        except LLMError as exc:
            reply = exc
        return self._accept(question, reply)

    def prefetch(self, questions: Sequence[str]) -> None:
        """Ask for the keywords of all new, non-empty ``questions`` in one batch."""
        with self._lock:
            todo = [q for q in dict.fromkeys(questions) if q.strip() and q not in self.artifacts]
        if todo:
            replies = self.llm.chat_many([self.request(q) for q in todo])
            for question, reply in zip(todo, replies, strict=True):
                self._accept(question, reply)

    def _accept(self, question: str, reply: Completion | LLMError) -> list[str]:
        text = reply.text if isinstance(reply, Completion) else None
        keywords = parse_keywords(text or "", self.max_keywords)
        fallback = None
        failure = None
        if not keywords:
            fallback = "identifiers"
            keywords = identifier_terms(question)[: self.max_keywords]
            failure = (
                f"model call failed ({type(reply).__name__}: {reply})"
                if isinstance(reply, LLMError)
                else "no keywords in the model's reply"
            ) + "; used the question's identifier terms"
        with self._lock:
            self.artifacts[question] = {"keywords": keywords, "reply": text, "fallback": fallback}
            if failure:
                self.failures[question] = failure
            else:
                self.failures.pop(question, None)
        return list(keywords)

    def __repr__(self) -> str:
        return f"LLMKeywordProvider(llm={getattr(self.llm, 'model', '?')!r})"

"""The answerer (docs/stages.md#answerer): one chat_many for all questions, the rung's prompt,
the context budget, checked file references, and failed calls recorded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from retrieval_bench.answering.answerer import (
    Answer,
    Answerer,
    AnswerFailure,
    check_references,
    linked_text,
)
from retrieval_bench.chunking.tokenizer import REGEX_CODE
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import ChatRequest, Completion, LLMError, LLMUnavailableError
from retrieval_bench.types import Chunk
from tests.fakes.llm import ScriptedLLM, last_user

FILES = {
    "src/shop/__init__.py": "",
    "src/shop/routes/__init__.py": "from . import a\n",
    "src/shop/routes/a.py": "def list_orders():\n    return []\n",
    "src/shop/services/c.py": "RATE = 5\n\ndef discount(n):\n    return n * RATE\n",
    "docs/guide.md": "# Guide\n",
}


def chunk(cid: str, path: str, start: int, end: int) -> Chunk:
    text = "\n".join(FILES[path].splitlines()[start - 1 : end])
    return Chunk(cid, path, start, end, "python", "function", None, text)


A = chunk("a", "src/shop/routes/a.py", 1, 2)
C = chunk("c", "src/shop/services/c.py", 3, 4)
INIT = chunk("init", "src/shop/routes/__init__.py", 1, 1)


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    for path, text in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    skipped = {"docs/guide.md": "not chunked", "src/shop/__init__.py": "empty"}
    return Corpus(tmp_path, [A, C, INIT], REGEX_CODE, skipped)


class CountingLLM(ScriptedLLM):
    def __init__(self, script: object) -> None:
        super().__init__(script)  # type: ignore[arg-type]
        self.batches: list[int] = []

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        self.batches.append(len(requests))
        return super().chat_many(requests)


def test_all_questions_go_through_one_chat_many(corpus: Corpus) -> None:
    llm = CountingLLM("The orders come from src/shop/routes/a.py:1-2.")
    answerer = Answerer(llm, max_tokens=77, temperature=0.25)
    out = answerer.answer_many({"q1": "Where?", "q2": "How?"}, {"q1": [A, C], "q2": [C]}, corpus)
    assert llm.batches == [2]
    assert [o.query_id for o in out] == ["q1", "q2"]
    assert all(isinstance(o, Answer) for o in out)
    first = out[0]
    assert isinstance(first, Answer)
    assert first.rung == "instructions" and first.chunk_ids == ("a", "c")
    assert first.text == "The orders come from src/shop/routes/a.py:1-2."
    request = llm.requests[0]
    assert request.max_tokens == 77 and request.temperature == 0.25
    assert request.messages[0]["role"] == "system"
    user = last_user(request)
    assert "src/shop/routes/a.py:1-2\n```python\ndef list_orders():" in user
    assert user.index("src/shop/routes/a.py:1-2") < user.index("src/shop/services/c.py:3-4")
    assert user.rstrip().endswith("as path:start-end.") and "Question: Where?" in user


def test_only_the_top_k_chunks_are_offered(corpus: Corpus) -> None:
    llm = ScriptedLLM("ok")
    (answer,) = Answerer(llm, k=1).answer_many({"q": "Where?"}, {"q": [C, A, INIT]}, corpus)
    assert isinstance(answer, Answer) and answer.chunk_ids == ("c",)
    assert "routes/a.py" not in last_user(llm.requests[0])


def test_chunks_over_the_budget_are_dropped_and_recorded(corpus: Corpus) -> None:
    llm = ScriptedLLM("ok")
    # the block of A is 28 regex tokens (src / shop / routes / a . py : 1 - 2 ``` python
    # def list_orders ( ) : return [ ] ```), C's 30: a budget of 40 keeps A only
    (answer,) = Answerer(llm, max_context_tokens=40).answer_many(
        {"q": "Where?"}, {"q": [A, C, INIT]}, corpus
    )
    assert isinstance(answer, Answer)
    assert answer.chunk_ids == ("a",) and answer.dropped_chunk_ids == ("c", "init")
    assert answer.context_tokens == 28 and not answer.truncated
    assert "services/c.py" not in last_user(llm.requests[0])


def test_bare_rung_has_no_system_message(corpus: Corpus) -> None:
    llm = ScriptedLLM("ok")
    Answerer(llm, rung="bare").answer_many({"q": "Where?"}, {"q": [A]}, corpus)
    (message,) = llm.requests[0].messages
    assert message["role"] == "user" and message["content"].endswith("Question: Where?")


def test_file_tree_rung_shows_the_common_ancestor_tree(corpus: Corpus) -> None:
    llm = ScriptedLLM("ok")
    Answerer(llm, rung="file_tree").answer_many({"q": "Where?"}, {"q": [A, C]}, corpus)
    user = last_user(llm.requests[0])
    assert user.startswith(
        "Files under src/shop/:\n__init__.py\nroutes/\n  __init__.py\n  a.py\nservices/c.py\n"
    )
    assert "docs/guide.md" not in user  # outside the ancestor of the shown files


def test_references_are_extracted_and_checked(corpus: Corpus) -> None:
    reply = (
        "See `src/shop/routes/a.py:1-2` and services/c.py:3-9, "
        "also src/shop/missing.py and __init__.py; docs/guide.md explains it."
    )
    llm = ScriptedLLM(reply)
    (answer,) = Answerer(llm).answer_many({"q": "Where?"}, {"q": [A]}, corpus)
    assert isinstance(answer, Answer)
    refs = {r.path: r for r in answer.references}
    a = refs["src/shop/routes/a.py"]
    assert (a.resolved, a.exists, a.lines_exist, a.in_context) == (
        "src/shop/routes/a.py",
        True,
        True,
        True,
    )
    assert (a.start_line, a.end_line) == (1, 2)
    assert reply[a.offset : a.offset + len(a.text)] == a.text
    c = refs["services/c.py"]  # resolved by its trailing components; lines 3-9 of a 4-line file
    assert (c.resolved, c.exists, c.lines_exist, c.in_context) == (
        "src/shop/services/c.py",
        True,
        False,
        False,
    )
    missing = refs["src/shop/missing.py"]
    assert (missing.resolved, missing.exists, missing.lines_exist) == (None, False, None)
    init = refs["__init__.py"]  # two files match: found, but not one path
    assert (init.resolved, init.exists, init.candidates) == (None, True, 2)
    guide = refs["docs/guide.md"]  # a skipped (not chunked) file still exists
    assert guide.exists and guide.resolved == "docs/guide.md" and guide.lines_exist is None


def test_check_references_without_a_root_skips_line_checks() -> None:
    (ref,) = check_references("see a.py:1-2", {"pkg/a.py"})
    assert ref.resolved == "pkg/a.py" and ref.exists and ref.lines_exist is None
    assert not ref.in_context


def test_linked_text_makes_existing_references_clickable(corpus: Corpus) -> None:
    llm = ScriptedLLM("In src/shop/routes/a.py:1-2 (not nope.py).")
    (answer,) = Answerer(llm).answer_many({"q": "Where?"}, {"q": [A]}, corpus)
    assert isinstance(answer, Answer)
    url = (corpus.root.resolve() / "src/shop/routes/a.py").as_uri() + "#L1-L2"
    assert (
        linked_text(answer, corpus.root) == f"In [src/shop/routes/a.py:1-2]({url}) (not nope.py)."
    )


def test_a_failed_call_is_a_failed_answer_and_the_rest_are_answered(corpus: Corpus) -> None:
    def script(request: ChatRequest) -> str | Exception:
        if "boom" in last_user(request):
            return LLMUnavailableError("server at http://x unreachable")
        return "fine"

    llm = CountingLLM(script)
    out = Answerer(llm).answer_many(
        {"q1": "first?", "q2": "boom?", "q3": "third?"}, {"q1": [A], "q2": [C], "q3": []}, corpus
    )
    assert llm.batches == [3]
    assert [type(o).__name__ for o in out] == ["Answer", "AnswerFailure", "Answer"]
    failed = out[1]
    assert isinstance(failed, AnswerFailure) and failed.failed
    assert failed.query_id == "q2" and failed.chunk_ids == ("c",)
    assert failed.error == "LLM call failed: server at http://x unreachable"
    assert isinstance(out[2], Answer) and out[2].chunk_ids == ()
    assert "(no code snippets were retrieved" in last_user(llm.requests[2])


def test_an_empty_question_is_failed_without_a_call(corpus: Corpus) -> None:
    llm = CountingLLM("fine")
    out = Answerer(llm).answer_many({"q1": "  ", "q2": "ok?"}, {"q1": [A], "q2": [A]}, corpus)
    assert isinstance(out[0], AnswerFailure) and out[0].error == "empty question"
    assert isinstance(out[1], Answer) and llm.batches == [1]


def test_tokens_and_cache_flag_come_from_the_completion(corpus: Corpus) -> None:
    reply = Completion("ok", "m", prompt_tokens=120, completion_tokens=7, cached=True)
    llm = ScriptedLLM(lambda _r: reply)
    (answer,) = Answerer(llm).answer_many({"q": "Where?"}, {"q": [A]}, corpus)
    assert isinstance(answer, Answer)
    assert (answer.prompt_tokens, answer.completion_tokens, answer.cached) == (120, 7, True)
    record = answer.to_dict()
    assert record["chunk_ids"] == ["a"] and record["references"] == []


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"rung": "fancy"}, "unknown rung 'fancy'"),
        ({"k": 0}, "k must be a positive integer"),
        ({"max_context_tokens": -1}, "max_context_tokens must be a positive integer"),
        ({"max_tokens": True}, "max_tokens must be a positive integer"),
        ({"temperature": -0.5}, "temperature must be >= 0"),
    ],
)
def test_bad_parameters_name_themselves(params: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        Answerer(ScriptedLLM("x"), **params)  # type: ignore[arg-type]

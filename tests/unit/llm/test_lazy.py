"""LazyLLM starts nothing until used; SharedProvider makes one client per run."""

from __future__ import annotations

from typing import Any

from retrieval_bench.harness.stages import StageContext
from retrieval_bench.llm.base import chat_request
from retrieval_bench.llm.lazy import LazyLLM, SharedProvider
from tests.fakes.llm import ScriptedLLM


def test_lazy_llm_calls_the_provider_only_on_first_use() -> None:
    made: list[ScriptedLLM] = []

    def provider() -> ScriptedLLM:
        made.append(ScriptedLLM("Yes"))
        return made[-1]

    lazy = LazyLLM(provider)
    assert not lazy.started and made == []
    assert lazy.chat(chat_request("q")).text == "Yes"
    assert lazy.chat_many([chat_request("a"), chat_request("b")])[1].text == "Yes"  # type: ignore[union-attr]
    assert lazy.model == "scripted" and lazy.stats.calls == 3
    assert len(made) == 1 and lazy.started


def test_shared_provider_makes_one_client_and_contexts_see_its_stats() -> None:
    shared = SharedProvider(lambda: ScriptedLLM("ok"))
    assert shared.made is None
    first: Any = StageContext(ds=None, llm_provider=shared)  # type: ignore[arg-type]
    first.llm.chat(chat_request("x"))
    # a second dataset's context has not used the client yet, but it exists: its
    # "before" snapshot must already count the first dataset's call
    second: Any = StageContext(ds=None, llm_provider=shared)  # type: ignore[arg-type]
    assert second.stats().calls == 1
    assert shared() is shared.made is first.llm

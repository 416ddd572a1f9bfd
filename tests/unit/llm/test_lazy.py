"""LazyLLM starts nothing until used, makes one client per run, and is the one lazy
handle of the stages, the answer metrics and ``rbench eval``."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.stages import StageContext
from retrieval_bench.llm.base import chat_request
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.metrics.answer.factory import build_metrics
from tests.fakes.llm import ScriptedLLM


def test_lazy_llm_calls_the_provider_only_on_first_use() -> None:
    made: list[ScriptedLLM] = []

    def provider() -> ScriptedLLM:
        made.append(ScriptedLLM("Yes"))
        return made[-1]

    lazy = LazyLLM(provider)
    assert not lazy.started and lazy.made is None and made == []
    assert lazy.chat(chat_request("q")).text == "Yes"
    assert lazy.chat_many([chat_request("a"), chat_request("b")])[1].text == "Yes"  # type: ignore[union-attr]
    assert lazy.model == "scripted" and lazy.stats.calls == 3
    assert len(made) == 1 and lazy.started and lazy() is lazy.made is made[0]


def test_without_a_provider_the_first_use_is_a_config_error() -> None:
    lazy = LazyLLM(None, missing="configure an llm: section")
    assert not lazy.available
    with pytest.raises(ConfigError, match="configure an llm: section"):
        lazy.chat(chat_request("q"))


def test_of_reuses_a_lazy_handle() -> None:
    lazy = LazyLLM(lambda: ScriptedLLM("ok"))
    assert LazyLLM.of(lazy) is lazy
    assert LazyLLM.of(None).available is False


def test_one_client_per_run_and_contexts_see_its_stats() -> None:
    shared = LazyLLM(lambda: ScriptedLLM("ok"))
    first: Any = StageContext(ds=None, llm_provider=shared)  # type: ignore[arg-type]
    assert first.llm is shared and shared.made is None
    first.llm.chat(chat_request("x"))
    # a second dataset's context has not used the client yet, but it exists: its
    # "before" snapshot must already count the first dataset's call
    second: Any = StageContext(ds=None, llm_provider=shared)  # type: ignore[arg-type]
    assert second.stats().calls == 1
    assert shared() is shared.made


def test_answer_metrics_share_the_run_client() -> None:
    calls: list[int] = []

    def provider() -> ScriptedLLM:
        calls.append(1)
        return ScriptedLLM("5")

    shared = LazyLLM(provider)
    build_metrics(["token_f1"], shared)
    assert calls == []  # no metric declares needs_llm: no client
    judges = build_metrics([{"name": "llm_judge"}, {"name": "llm_judge", "id": "j2"}], shared)
    assert calls == [1] and all(j.llm is shared.made for j in judges)  # type: ignore[attr-defined]

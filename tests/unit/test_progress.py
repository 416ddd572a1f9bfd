"""The progress reporter (counts, ETA, throttled plain lines), load timing and the
LLM wrapper that counts finished calls."""

from __future__ import annotations

import io
import time
from collections.abc import Sequence

import pytest

from retrieval_bench import loads
from retrieval_bench.llm.base import ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.llm.reporting import ReportingLLM
from retrieval_bench.progress import (
    Callback,
    ProgressReporter,
    announce,
    format_duration,
    progress_line,
)
from tests.fakes.llm import ScriptedLLM, last_user


class FakeClock:
    """A clock the test moves by hand (no real time in assertions)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_have_counts_percent_and_eta() -> None:
    assert progress_line("index shopapi", 120, 480, "files", 4.0) == (
        "index shopapi: 120/480 files (25%), eta 12s"
    )
    assert progress_line("index shopapi", 480, 480, "files", 3.14) == (
        "index shopapi: 480/480 files (100%), 3.1s"
    )
    assert progress_line("x", 0, 10, "", 0.0) == "x: 0/10 (0%)"
    assert format_duration(185) == "3m05s" and format_duration(3720) == "1h02m"


def test_without_a_tty_lines_are_throttled_first_and_last_always_shown() -> None:
    out, clock = io.StringIO(), FakeClock()
    reporter = ProgressReporter(out, tty=False, interval=5.0, clock=clock)
    reporter("index a", 0, 100, "files")
    for done in range(1, 100):
        clock.now += 0.125  # 12.375 s in all: a line at 5 s and at 10 s, none between
        reporter("index a", done, 100, "files")
    clock.now += 0.125
    reporter("index a", 100, 100, "files")
    assert out.getvalue().splitlines() == [
        "index a: 0/100 files (0%)",
        "index a: 40/100 files (40%), eta 8s",
        "index a: 80/100 files (80%), eta 2s",
        "index a: 100/100 files (100%), 12.5s",
    ]


def test_interval_zero_prints_every_update_and_units_restart_a_label() -> None:
    out = io.StringIO()
    reporter = ProgressReporter(out, tty=False, interval=0, clock=FakeClock())
    for done in range(3):
        reporter("index a", done, 2, "files")
    reporter("index a", 1, 4, "chunks embedded")
    reporter.note("[a] bm25  0.4s")
    assert out.getvalue().splitlines() == [
        "index a: 0/2 files (0%)",
        "index a: 1/2 files (50%)",
        "index a: 2/2 files (100%), 0.0s",
        "index a: 1/4 chunks embedded (25%)",
        "[a] bm25  0.4s",
    ]


def test_a_slow_first_step_does_not_inflate_the_eta() -> None:
    out, clock = io.StringIO(), FakeClock()
    reporter = ProgressReporter(out, tty=False, interval=0, clock=clock)
    reporter("embed", 0, 10, "chunks")
    clock.now += 10.0  # the first batch also loaded the model
    reporter("embed", 1, 10, "chunks")
    clock.now += 1.0
    reporter("embed", 2, 10, "chunks")
    assert out.getvalue().splitlines()[-1] == "embed: 2/10 chunks (20%), eta 8s"  # not 44s


def test_disabled_reporter_prints_nothing() -> None:
    out = io.StringIO()
    reporter = ProgressReporter(out, tty=False, interval=0, enabled=False)
    reporter("x", 1, 2, "rows")
    reporter.note("hello")
    assert out.getvalue() == ""


def test_a_terminal_gets_a_bar_with_counts() -> None:
    out = io.StringIO()
    reporter = ProgressReporter(out, tty=True, interval=0)
    reporter("index a", 3, 10, "files")
    assert "3/10" in out.getvalue() and "index a" in out.getvalue()
    reporter("index a", 10, 10, "files")
    reporter.close()


def test_announce_reaches_only_the_active_reporter() -> None:
    out = io.StringIO()
    announce("nobody hears this")
    with ProgressReporter(out, tty=False, interval=0):
        announce("loading the model ...")
    announce("nor this")
    assert out.getvalue() == "loading the model ...\n"


def test_timed_load_is_kept_out_of_own_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    monkeypatch.setattr(loads, "_EVENTS", [])  # loads recorded on the real clock
    t0 = time.perf_counter()
    clock.now += 1.0  # own work
    with loads.timed_load("test model"):
        clock.now += 5.0
    clock.now += 0.5  # own work
    seconds, loaded = loads.own_seconds(t0)
    assert seconds == pytest.approx(1.5)
    assert loaded == {"test model": pytest.approx(5.0)}
    assert loads.loads_since(clock.now) == {}


def _requests(n: int) -> list[ChatRequest]:
    return [chat_request(f"q{i}") for i in range(n)]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_reporting_llm_counts_each_finished_call(concurrency: int) -> None:
    def script(r: ChatRequest) -> str | Exception:
        return RuntimeError("down") if last_user(r) == "q2" else last_user(r).upper()

    inner = ScriptedLLM(script)
    inner.settings = type("S", (), {"concurrency": concurrency})()  # type: ignore[attr-defined]
    events: list[tuple[str, int, int, str]] = []
    llm = ReportingLLM(inner, Callback(lambda *e: events.append(e)), "[ds] llm-yesno")
    replies: Sequence[Completion | LLMError] = llm.chat_many(_requests(5))
    assert [r.text if isinstance(r, Completion) else "ERR" for r in replies] == [
        "Q0", "Q1", "ERR", "Q3", "Q4",
    ]  # fmt: skip
    assert [e[1] for e in events] == [0, 1, 2, 3, 4, 5]
    assert {(e[0], e[2], e[3]) for e in events} == {("[ds] llm-yesno", 5, "LLM calls")}
    assert llm.chat_many([]) == []

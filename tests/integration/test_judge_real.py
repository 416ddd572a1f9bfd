"""LLM-as-judge against the real local model server (llama.cpp + SmolLM2-135M).

The 135M model is a weak judge: these tests check that every answer becomes a
score in [0, 1] or a missing value with its raw text, and that repeats really
reach the model — not that the model ranks right. What it did is printed
(run with ``-s`` to see it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_bench.contracts.answer_metric import Sample, Score
from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.client import LLMClient
from retrieval_bench.llm.factory import make_llm
from retrieval_bench.llm.local_server import ServerState
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.metrics.answer.judge import LLMJudge
from retrieval_bench.metrics.answer.judge_consistency import consistency
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES

pytestmark = pytest.mark.integration


def _questions(n: int) -> list[dict[str, str]]:
    with (FIXTURES / "shopapi" / "questions.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[:n]


def _samples() -> list[Sample]:
    """Two questions, each with its reference as the (correct) prediction and the
    other question's reference as a (wrong) one."""
    q1, q2 = _questions(2)
    out = []
    for q, other in ((q1, q2), (q2, q1)):
        for kind, prediction in (
            ("right", q["reference_answer"]),
            ("wrong", other["reference_answer"]),
        ):
            out.append(
                Sample(prediction, (q["reference_answer"],), q["query"], id=f"{q['id']}-{kind}")
            )
    return out


@pytest.fixture
def llm(llm_server: ServerState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LLMClient:
    """A client with an empty response cache, so calls really reach the model."""
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    return make_llm(LLMSpec(base_url=llm_server.base_url, concurrency=2), Workspace(tmp_path))


def _check(scores: list[Score], allowed: set[float] | None = None) -> None:
    for s in scores:
        if s.value is None:
            assert s.error and isinstance(s.raw, str), s
        else:
            assert 0.0 <= s.value <= 1.0 and isinstance(s.raw, str), s
            if allowed is not None:
                assert s.value in allowed, s


def _show(title: str, samples: list[Sample], scores: list[Score]) -> None:
    print(f"\n{title}")
    for sample, s in zip(samples, scores, strict=True):
        print(f"  {sample.id:<18} {s.value!s:<5} raw={s.raw!r} error={s.error}")


def test_scale_judge_scores_right_and_wrong_answers(llm: LLMClient) -> None:
    samples = _samples()
    judge = LLMJudge(llm=llm, max_tokens=4)
    scores = judge.score_samples(samples)
    _show("scale_1_5 judge (SmolLM2-135M):", samples, scores)
    _check(scores, {0.2, 0.4, 0.6, 0.8, 1.0})
    assert llm.stats.calls == len(samples) and llm.stats.failures == 0
    assert judge.score(samples[0]) == scores[0]  # the same call again: served from the cache
    assert llm.stats.cache_hits == 1


def test_yes_no_judge(llm: LLMClient) -> None:
    samples = _samples()
    judge = LLMJudge(llm=llm, template_file="judge_yes_no", extractor="yes_no", max_tokens=2)
    scores = judge.score_samples(samples)
    _show("yes_no judge (SmolLM2-135M):", samples, scores)
    _check(scores, {0.0, 1.0})
    assert llm.stats.calls == len(samples) and llm.stats.failures == 0


def test_consistency_repeats_reach_the_model(llm: LLMClient, tmp_path: Path) -> None:
    samples = _samples()[:3]
    judge = LLMJudge(llm=llm, max_tokens=4)
    report = consistency(judge, samples, repeats=3, temperature=0.7)
    print("\n" + report.format())
    # 9 distinct requests: every repeat went to the model and was cached under its own key
    assert llm.stats.calls == 9 and llm.stats.cache_hits == 0
    assert ResponseCache.in_dir(tmp_path / "cache").count() == 9
    assert len(report.samples) == 3 and report.repeats == 3
    for s in report.samples:
        assert len(s.values) == 3 and s.missing == sum(v is None for v in s.values)
        assert all(v is None or 0.0 <= v <= 1.0 for v in s.values)
        if s.modal_agreement is not None:
            assert 1 / 3 <= s.modal_agreement <= 1.0
        if s.pairwise_agreement is not None:
            assert 0.0 <= s.pairwise_agreement <= 1.0
    for value in (report.pairwise_agreement, report.modal_agreement, report.unanimous_share):
        assert value is None or 0.0 <= value <= 1.0
    assert report.mean_variance is None or 0.0 <= report.mean_variance <= 0.16 + 1e-9
    assert report.fleiss_kappa is None or -1.0 <= report.fleiss_kappa <= 1.0
    assert report.missing == sum(s.missing for s in report.samples)
    assert json.loads(json.dumps(report.as_dict()))["n_samples"] == 3

    again = consistency(judge, samples, repeats=3, temperature=0.7)
    assert llm.stats.calls == 9 and llm.stats.cache_hits == 9  # a rerun replays the cache
    assert again.as_dict() == report.as_dict()

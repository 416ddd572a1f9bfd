"""LLMJudge with a scripted model: templates, batches, failures
(docs/metrics.md#llm-as-judge)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.contracts.registry import create
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import ChatRequest, LLMResponseError
from retrieval_bench.metrics.answer.judge import LLMJudge, load_template
from tests.fakes.llm import ScriptedLLM, last_user

ALL = "Q={question}|R={reference}|P={prediction}|C={contexts}|{{literal}}"


def sample(prediction: str = "Paris", **kw: object) -> Sample:
    fields: dict[str, object] = {
        "references": ("Paris is the capital",),
        "question": "Capital of France?",
    }
    fields.update(kw)
    return Sample(prediction, **fields)  # type: ignore[arg-type]


def test_template_fills_every_placeholder_and_keeps_literal_braces() -> None:
    llm = ScriptedLLM("4")
    judge = LLMJudge(llm=llm, template=ALL)
    s = sample("x = {a: 1}", references=("r1", "r2"), contexts=("c1", "c2"))
    assert judge.score(s).value == 0.8
    assert last_user(llm.requests[0]) == (
        "Q=Capital of France?|R=r1\nr2|P=x = {a: 1}|C=c1\n\nc2|{literal}"
    )


def test_missing_question_and_references_fill_as_empty() -> None:
    judge = LLMJudge(llm=ScriptedLLM("3"), template="[{question}][{reference}][{prediction}]")
    assert judge.prompt(Sample("p")) == "[][][p]"


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("{question} {answer}", "{answer}"),
        ("{prediction} {}", "{}"),
        ("{prediction} {0}", "{0}"),
        ("{prediction.upper}", "{prediction.upper}"),
        ("{prediction!r}", "{prediction!r}"),
        ("{prediction:>9}", "{prediction:>9}"),
        ("Q: {question} R: {reference}", "{prediction}"),
        ("{prediction} {", "literal braces"),
        ("{prediction} }", "literal braces"),
    ],
)
def test_bad_template_names_the_placeholder(template: str, named: str) -> None:
    with pytest.raises(ValueError) as err:
        LLMJudge(llm=ScriptedLLM("4"), template=template)
    assert named in str(err.value)


def test_default_template_is_the_seed_1_to_5_prompt_with_a_system_message() -> None:
    llm = ScriptedLLM("5")
    judge = LLMJudge(llm=llm)
    judge.score(sample())
    (req,) = llm.requests
    assert req.messages[0]["role"] == "system" and "1 to 5" in req.messages[0]["content"]
    user = last_user(req)
    assert "Question: Capital of France?" in user
    assert "Reference Answer: Paris is the capital" in user
    assert "Predicted Answer: Paris" in user
    assert "Rate the predicted answer on a scale of 1-5" in user


def test_system_override_and_none() -> None:
    llm = ScriptedLLM("4")
    LLMJudge(llm=llm, system="Be fair.").score(sample())
    LLMJudge(llm=llm, system="").score(sample())
    LLMJudge(llm=llm, template="{prediction}").score(sample())
    assert llm.requests[0].messages[0] == {"role": "system", "content": "Be fair."}
    assert [m["role"] for m in llm.requests[1].messages] == ["user"]
    assert [m["role"] for m in llm.requests[2].messages] == ["user"]


def test_template_file_plain_sectioned_and_builtin(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("Grade: {prediction}\n", encoding="utf-8")
    assert load_template(str(plain)) == (None, "Grade: {prediction}\n")
    sectioned = tmp_path / "s.txt"
    sectioned.write_text("# comment\n[system]\nSYS\n[user]\nU {prediction}\n", encoding="utf-8")
    assert load_template(str(sectioned)) == ("SYS", "U {prediction}")
    system, user = load_template("judge_yes_no")
    assert system is not None and "YES or NO" in user and "{prediction}" in user
    llm = ScriptedLLM("YES")
    judge = LLMJudge(llm=llm, template_file="judge_yes_no", extractor="yes_no")
    assert judge.score(sample()).value == 1.0


def test_template_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="judge_default, judge_yes_no"):
        LLMJudge(llm=ScriptedLLM("4"), template_file=str(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe{prediction}")
    with pytest.raises(ConfigError, match="UTF-8"):
        LLMJudge(llm=ScriptedLLM("4"), template_file=str(bad))
    broken = tmp_path / "broken.txt"
    broken.write_text("[user]\n{reply}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\{reply\}"):
        LLMJudge(llm=ScriptedLLM("4"), template_file=str(broken))
    with pytest.raises(ValueError, match="not both"):
        LLMJudge(llm=ScriptedLLM("4"), template="{prediction}", template_file=str(broken))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_parameters(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LLMJudge(llm=ScriptedLLM("4"), **kw)  # type: ignore[arg-type]


def test_unknown_extractor_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="scale_1_5"):
        LLMJudge(llm=ScriptedLLM("4"), extractor="stars")


def test_temperature_and_max_tokens_are_passed_through() -> None:
    llm = ScriptedLLM("4")
    judge = LLMJudge(llm=llm, temperature=0.2, max_tokens=5)
    judge.score(sample())
    judge.score_samples([sample(), sample("Lyon")])
    assert [(r.temperature, r.max_tokens, r.repeat) for r in llm.requests] == [(0.2, 5, 0)] * 3
    default = ScriptedLLM("4")
    LLMJudge(llm=default).score(sample())
    assert (default.requests[0].temperature, default.requests[0].max_tokens) == (0.0, 16)


def test_batch_with_a_failed_call_and_an_unparseable_answer() -> None:
    replies: dict[str, str | Exception] = {
        "good": "Rating: 4/5 - correct and complete",
        "fails": LLMResponseError("server said 500"),
        "garbled": "I cannot judge this answer.",
        "best": "**5**",
    }

    def script(req: ChatRequest) -> str | Exception:
        return replies[last_user(req).split("P=")[1]]

    llm = ScriptedLLM(script)
    judge = LLMJudge(llm=llm, template="P={prediction}")
    scores = judge.score_samples([sample(p) for p in replies])
    good, fails, garbled, best = scores
    assert (good.value, good.raw, good.reason) == (
        0.8,
        "Rating: 4/5 - correct and complete",
        "correct and complete",
    )
    assert fails.value is None and fails.raw is None
    assert fails.error == "LLM call failed: server said 500"
    assert garbled.value is None and garbled.raw == "I cannot judge this answer."
    assert garbled.error == "judge answered with no score: 'I cannot judge this answer.'"
    assert (best.value, best.raw, best.reason) == (1.0, "**5**", None)
    assert len(llm.requests) == 4  # one call per sample, all in one chat_many
    assert llm.stats.calls == 3 and llm.stats.failures == 1


def test_single_score_matches_the_batch_and_never_raises_on_llm_errors() -> None:
    judge = LLMJudge(llm=ScriptedLLM(lambda _r: LLMResponseError("down")))
    assert judge.score(sample()) == judge.score_samples([sample()])[0]
    assert judge.score(sample()).error == "LLM call failed: down"


def test_empty_batch_makes_no_call() -> None:
    llm = ScriptedLLM("4")
    assert LLMJudge(llm=llm).score_samples([]) == []
    assert llm.requests == []


def test_custom_callable_extractor_and_one_that_raises() -> None:
    judge = LLMJudge(llm=ScriptedLLM("grade B"), extractor=lambda t: 0.75 if "B" in t else None)
    assert judge.score(sample()) == judge.score(sample())
    got = judge.score(sample())
    assert (got.value, got.raw, got.reason) == (0.75, "grade B", None)

    def broken(text: str) -> float | None:
        raise KeyError(text)

    failed = LLMJudge(llm=ScriptedLLM("grade B"), extractor=broken).score(sample())
    assert failed.value is None and failed.raw == "grade B"
    assert failed.error is not None and "score extractor failed: KeyError" in failed.error


def test_evaluate_batch_and_aggregate_count_missing() -> None:
    answers = iter(["5", "no idea", "3"])
    judge = LLMJudge(llm=ScriptedLLM(lambda _r: next(answers)), template="{prediction}")
    scores = judge.evaluate_batch(["a", "b", "c"], ["ra", "rb", "rc"])
    assert [s.value for s in scores] == [1.0, None, 0.6]
    agg = judge.aggregate(scores, n_resamples=0)
    assert (agg.count, agg.missing) == (2, 1)
    assert agg.mean == pytest.approx(0.8)


def test_registered_and_created_with_llm() -> None:
    from retrieval_bench.contracts.registry import METRICS

    assert METRICS.type_of("llm_judge") is LLMJudge and LLMJudge.needs_llm
    llm = ScriptedLLM("NO")
    judge = create("metrics", "llm_judge", llm=llm, extractor="yes_no")
    assert isinstance(judge, LLMJudge) and judge.name == "llm_judge"
    assert judge.score(sample()).value == 0.0
    assert LLMJudge(llm=llm, name="correct").name == "correct"
    with pytest.raises(TypeError, match="llm_judge: no LLM client"):
        create("metrics", "llm_judge")
    with pytest.raises(ConfigError, match="temperature: Input should be a valid number"):
        LLMJudge(llm=llm, temperature="hot")

"""LLM-as-judge metric (docs/metrics.md#llm-as-judge).

A prompt template is filled with the sample, sent to the model at a low
temperature, and the answer is turned into a number in [0, 1] by a score
extractor (:mod:`retrieval_bench.metrics.answer.judge_extractors`; default
``scale_1_5``: the first standalone 1–5 rating divided by 5).

Templates
---------
Python ``str.format`` syntax with four placeholders:

* ``{question}`` — the sample's question ("" when it has none);
* ``{reference}`` — its reference answer(s), one per line;
* ``{prediction}`` — the answer being judged (required);
* ``{contexts}`` — the retrieved contexts, separated by blank lines.

Literal braces are written doubled: ``{{`` and ``}}`` (``"JSON like {{\\"a\\": 1}}"``
renders as ``JSON like {"a": 1}``). Braces inside the *filled-in values*
(code in a prediction) need nothing: values are never re-parsed. The template
is checked when the judge is built: an unknown placeholder, a positional
``{}``, a format spec or conversion (``{prediction!r}``), an unbalanced brace
or a missing ``{prediction}`` raises :class:`ValueError` naming it.

``template_file`` is a path to a text file, or the name of a built-in prompt in
``metrics/answer/prompts/`` (``judge_default``, ``judge_yes_no``). A file may be split
into ``[system]`` and ``[user]`` sections (each starting on a line of its own;
lines before the first section are comments, as in the reranker prompts); a
file without a ``[user]`` line is the user template as a whole. ``system``
overrides the file's system section (``system=""`` sends none).

Failures (docs/architecture.md#bad-input-and-failures)
------------------------------------------------------
A batch goes through ``llm.chat_many`` (concurrent up to the client's limit,
failures returned, not raised). A failed call becomes
``Score.missing("LLM call failed: ...")``; an answer with no extractable score
becomes ``Score.missing("judge answered with no score: ...", raw=text)``.
Every score keeps the model's raw text in ``Score.raw``; when a built-in
extractor found the score, the text after it (if any) is ``Score.reason``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import StrictFloat, StrictInt

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLM, ChatRequest, Completion, LLMError, chat_request
from retrieval_bench.llm.prompt_files import (
    has_section,
    parse_sections,
    read_prompt_text,
    template_fields,
)
from retrieval_bench.metrics.answer.judge_extractors import (
    ExtractorFn,
    TextExtractor,
    get_extractor,
)

__all__ = ["PLACEHOLDERS", "LLMJudge", "check_template", "fill_template", "load_template"]

PLACEHOLDERS = ("question", "reference", "prediction", "contexts")
PROMPTS_PACKAGE = "retrieval_bench.metrics.answer"
BUILTIN_PROMPTS = ("judge_default", "judge_yes_no")
_REASON_STRIP = " \t\r\n.,;:!-–—*)]"


def check_template(template: str, owner: str = "llm_judge") -> None:
    """Raise ValueError unless ``template`` uses only the known placeholders and
    has ``{prediction}`` (see the module docstring)."""
    if not isinstance(template, str):
        raise TypeError(f"{owner}: template must be a string, got {type(template).__name__}")
    seen = template_fields(template, owner, "template", PLACEHOLDERS)
    if "prediction" not in seen:
        raise ValueError(
            f"{owner}: template has no {{prediction}} placeholder; "
            "the judge must see the answer it grades"
        )


def fill_template(template: str, sample: Sample) -> str:
    """``template`` with the sample's fields put in (no re-parsing of the values)."""
    return template.format_map(
        {
            "question": sample.question or "",
            "reference": "\n".join(sample.references),
            "prediction": sample.prediction,
            "contexts": "\n\n".join(sample.contexts),
        }
    )


def load_template(spec: str, owner: str = "llm_judge") -> tuple[str | None, str]:
    """(system, user template) of a prompt file path or built-in prompt name."""
    name = spec.removesuffix(".txt")
    path = Path(spec)
    try:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
        elif name in BUILTIN_PROMPTS:
            text = read_prompt_text(PROMPTS_PACKAGE, name)
        else:
            raise ConfigError(
                f"{owner}: template_file {spec!r} not found; pass a path to a text file or "
                f"one of the built-in prompts: {', '.join(BUILTIN_PROMPTS)}"
            )
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{owner}: cannot read template_file {spec!r} ({exc}); pass a UTF-8 text file"
        ) from None
    if not has_section(text, "user"):
        return None, text
    sections = parse_sections(text)
    return sections.get("system"), sections["user"]


class LLMJudge(MetricBase):
    """A model grades each answer; see the module docstring.

    Parameters (``Params``): ``template`` or ``template_file`` (default: the
    built-in ``judge_default``, a 1–5 rating prompt); ``extractor`` (a name from
    :data:`~retrieval_bench.metrics.answer.judge_extractors.EXTRACTOR_NAMES` or a
    callable text → float | None); ``system`` (system message; None → the prompt
    file's, "" → none); ``temperature`` (0.0) and ``max_tokens`` (16) of each call.
    Keywords: ``llm`` (the client; injected by the metric factory) and ``name``.
    """

    description = "LLM-as-judge: a model rates the prediction against the reference"
    needs_llm = True

    class Params(StageParams):
        template: str | None = None
        template_file: str | None = None
        extractor: str | ExtractorFn = "scale_1_5"
        system: str | None = None
        temperature: StrictFloat = 0.0
        max_tokens: StrictInt = 16

    params: LLMJudge.Params

    def __init__(
        self,
        params: LLMJudge.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        name: str = "llm_judge",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        if not isinstance(name, str) or not name:
            raise ValueError(f"llm_judge: name must be a non-empty string, got {name!r}")
        self.name = name
        if llm is None:
            raise TypeError(
                f"{name}: no LLM client; pass llm= (the metric factory passes the run's)"
            )
        template, temperature, max_tokens = p.template, p.temperature, p.max_tokens
        if template is not None and p.template_file is not None:
            raise ValueError(f"{name}: pass template or template_file, not both")
        file_system: str | None = None
        if template is None:
            file_system, template = load_template(p.template_file or "judge_default", name)
        check_template(template, name)
        if not math.isfinite(temperature):
            raise ValueError(f"{name}: temperature must be a finite number, got {temperature!r}")
        if temperature < 0:
            raise ValueError(f"{name}: temperature must be >= 0, got {temperature}")
        if max_tokens < 1:
            raise ValueError(f"{name}: max_tokens must be a positive integer, got {max_tokens!r}")
        self.llm = llm
        self.template = template
        self.system = file_system if p.system is None else (p.system or None)
        self.extractor = get_extractor(p.extractor)
        self.temperature = float(temperature)
        self.max_tokens = max_tokens

    # ------------------------------------------------------------ requests
    def prompt(self, sample: Sample) -> str:
        """The user message for ``sample``."""
        return fill_template(self.template, sample)

    def request(
        self, sample: Sample, *, temperature: float | None = None, repeat: int = 0
    ) -> ChatRequest:
        """The chat request for ``sample`` (``repeat`` > 0 makes a distinct cache key)."""
        return chat_request(
            self.prompt(sample),
            system=self.system,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens,
            repeat=repeat,
        )

    # -------------------------------------------------------------- verdict
    def verdict(self, reply: Completion | LLMError) -> Score:
        """A model reply (or the error of a failed call) → a :class:`Score`."""
        if isinstance(reply, LLMError):
            return Score.missing(f"LLM call failed: {reply}")
        text = reply.text
        reason: str | None = None
        try:
            if isinstance(self.extractor, TextExtractor):
                found = self.extractor.find(text)
                value = None if found is None else found.value
                if found is not None:
                    reason = text[found.end :].strip(_REASON_STRIP) or None
            else:
                value = self.extractor(text)
        except Exception as exc:  # noqa: BLE001 - a custom extractor must not stop the batch
            return Score.missing(f"score extractor failed: {type(exc).__name__}: {exc}", raw=text)
        if value is None or not math.isfinite(value):
            shown = " ".join(text.split())[:120]
            return Score.missing(f"judge answered with no score: {shown!r}", raw=text)
        return Score(value=float(value), reason=reason, raw=text)

    # -------------------------------------------------------------- scoring
    def score(self, sample: Sample) -> Score:
        """One chat call; a failed call is a missing value, like in a batch."""
        try:
            reply: Completion | LLMError = self.llm.chat(self.request(sample))
        except LLMError as exc:
            reply = exc
        return self.verdict(reply)

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        """The whole batch through one ``llm.chat_many`` (concurrent; failures returned)."""
        if not samples:
            return []
        replies = self.llm.chat_many([self.request(s) for s in samples])
        if len(replies) != len(samples):
            raise LLMError(
                f"{self.name}: the LLM returned {len(replies)} replies for {len(samples)} requests"
            )
        return [self.verdict(r) for r in replies]

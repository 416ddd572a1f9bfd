"""Worked use case: classify a programming question (docs/architecture.md#prompt-evaluation).

Variables: ``question``. Ground-truth fields: ``category`` (``bug`` — something
is broken; ``howto`` — how to do a task; ``concept`` — explain an idea or a
difference) and ``language`` (the programming language it is about).

``parse`` accepts what small models actually write: a JSON object, or plain
text such as "This question is a how-to request about Go" — it then looks for
the first category keyword and the first language name. ``process`` insists
on a known value for each field present (so a ground-truth row with
``category: "other"`` or without a language fails validation); a reply naming
only one of them keeps ``None`` for the other, which then does not match, and
a reply naming neither is a failed row. Matching is
exact per field; ``row_score`` is the share of the two fields right. The
bundled rows (``data/code_questions.rows.csv``) and prompts were written for
this project.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.prompt_eval.fields import as_choice
from retrieval_bench.prompt_eval.usecase import (
    ExampleData,
    UseCase,
    extract_json,
    register_use_case,
)

CATEGORIES = ("bug", "howto", "concept")
LANGUAGES = ("python", "javascript", "go", "rust", "java", "sql")

_CATEGORY_WORDS = (
    ("howto", r"how[\s-]?to"),
    ("bug", r"\bbug|\berror|\bbroken|\bdebug"),
    ("concept", r"\bconcept|\bexplanation|\bdifference|\btheory"),
)
_LANGUAGE_WORDS = (
    ("javascript", r"\bjavascript\b|\bjs\b|\bnode(?:\.js)?\b|\btypescript\b"),
    ("python", r"\bpython\b"),
    ("rust", r"\brust\b"),
    ("java", r"\bjava\b"),
    ("sql", r"\bsql\b|\bpostgres(?:ql)?\b|\bmysql\b|\bsqlite\b"),
    ("go", r"\bgolang\b|\bGo\b"),
)
_DATA = Path(__file__).parent / "data"


def _first(text: str, table: tuple[tuple[str, str], ...], *, case: bool = False) -> str | None:
    """The label whose pattern matches earliest in ``text``."""
    best: tuple[int, str] | None = None
    for label, pattern in table:
        flags = 0 if case and label == "go" else re.IGNORECASE
        m = re.search(pattern, text, flags)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), label)
    return None if best is None else best[1]


@register_use_case
class CodeQuestions(UseCase):
    name = "code_questions"
    description = "Classify a programming question by category and language."
    variables = ("question",)
    fields = ("category", "language")
    examples = ExampleData(
        rows=_DATA / "code_questions.rows.csv",
        prompts=_DATA / "code_questions.prompts.json",
    )

    def parse(self, raw: str) -> Any:
        try:
            data = extract_json(raw)
            if isinstance(data, dict):
                return data
        except ValueError:
            pass
        found = {
            "category": _first(raw, _CATEGORY_WORDS),
            "language": _first(raw, _LANGUAGE_WORDS, case=True),
        }
        if not any(found.values()):
            raise ValueError(f"no category or language named in {raw[:60]!r}")
        return {k: v for k, v in found.items() if v}

    def process(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise ValueError("expected an object with category and language")
        category, language = data.get("category"), data.get("language")
        return {
            "category": None if category is None else as_choice(category, "category", CATEGORIES),
            "language": None if language is None else as_choice(language, "language", LANGUAGES),
        }

"""Worked use case: extract action items from meeting notes
(docs/architecture.md#prompt-evaluation).

Variables: ``notes``. Ground-truth field: ``action_items``, a list of
``{"owner": "Alice", "task": "send the budget report"}`` (owner may be empty
when nobody was named). ``process`` also computes ``owners`` (the set of
owners, lower-cased) and ``count``, which ``evaluate`` compares too.

Matching: a predicted item matches a ground-truth item when the owners agree
(case-insensitive; an empty ground-truth owner accepts any) and at least half
of the ground-truth task's content words appear in the predicted task; items
are paired greedily one to one. That gives TP/FP/FN per row; the per-field
flags are ``action_items`` (every item found, nothing extra), ``owners`` and
``count``. ``row_score`` is the row's F1 = 2TP / (2TP + FP + FN) (1 when both
lists are empty; a failed row scores 0); prompts are sorted by mean row F1,
then by TP, then by rows fully right.

``parse`` takes JSON (an object with ``action_items`` or a bare list), or
falls back to text lines/sentences such as "Alice: send the report",
"- Bob will fix the login bug" or "Carol to book the room" (a sentence
"X will a, and Y will b" gives two items).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.prompt_eval.fields import as_list, as_text, normalise_words
from retrieval_bench.prompt_eval.records import EvalValue, PromptResult
from retrieval_bench.prompt_eval.usecase import (
    ExampleData,
    UseCase,
    extract_json,
    register_use_case,
)

_DATA = Path(__file__).parent / "data"
_STOPWORDS = frozenset(
    {"a", "an", "the", "to", "of", "for", "by", "on", "in", "at", "and", "or", "with", "will"}
    | {"should", "must", "is", "are", "be", "it", "this", "that", "we", "our", "their", "his"}
    | {"her", "next", "before", "after", "until"}
)
_SPLIT = re.compile(r"(?<=[.;])\s+|,?\s+and\s+(?=[A-Z][a-z]+\s+will\b)")
"""Sentence ends, and "X will a, and Y will b" joins."""
_ITEM_LINE = re.compile(
    r"^\W*(?P<owner>[A-Z][a-z]+)\s*(?::|-|\bwill\b|\bto\b|\bshould\b|\bmust\b)\s*(?P<task>.+)$"
)


def _content_words(text: str) -> set[str]:
    return {w for w in normalise_words(text) if w not in _STOPWORDS}


def _item(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, str):
        m = _ITEM_LINE.match(value.strip())
        if m:
            return {"owner": m["owner"], "task": as_text(m["task"], where)}
        return {"owner": "", "task": as_text(value, where)}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object with owner and task")
    task = value.get("task") or value.get("action") or value.get("item")
    owner = value.get("owner") or value.get("assignee") or ""
    return {
        "owner": as_text(owner, f"{where}.owner", allow_empty=True),
        "task": as_text(task, where),
    }


def match_items(
    predicted: Sequence[Mapping[str, str]], truth: Sequence[Mapping[str, str]]
) -> tuple[int, int, int]:
    """(TP, FP, FN) under the greedy one-to-one matching of the module docstring."""
    free = list(range(len(predicted)))
    tp = 0
    for gold in truth:
        words = _content_words(gold["task"])
        for i in free:
            p = predicted[i]
            owner_ok = not gold["owner"] or p["owner"].lower() == gold["owner"].lower()
            overlap = len(words & _content_words(p["task"])) / max(1, len(words))
            if owner_ok and overlap >= 0.5:
                free.remove(i)
                tp += 1
                break
    return tp, len(predicted) - tp, len(truth) - tp


def _f1(tp: float, fp: float, fn: float) -> float:
    return 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


@register_use_case
class ActionItems(UseCase):
    name = "action_items"
    description = "Extract action items (owner, task) from meeting notes."
    variables = ("notes",)
    fields = ("action_items",)
    examples = ExampleData(
        rows=_DATA / "action_items.rows.json",
        prompts=_DATA / "action_items.prompts.json",
    )

    def parse(self, raw: str) -> Any:
        try:
            return extract_json(raw)
        except ValueError:
            pass
        pieces = [p for line in raw.splitlines() for p in _SPLIT.split(line)]
        items = [p.strip().rstrip(".") for p in pieces if _ITEM_LINE.match(p.strip())]
        if not items and re.search(r"\bno action items\b|\bnone\b", raw, re.IGNORECASE):
            return {"action_items": []}
        if not items:
            raise ValueError(f"no action items found in {raw[:60]!r}")
        return {"action_items": items}

    def process(self, data: Any) -> dict[str, Any]:
        if isinstance(data, Mapping):
            if "action_items" not in data:
                raise ValueError("missing action_items")
            data = data["action_items"]
        values = as_list(data, "action_items")
        items = [_item(v, f"action_items[{i}]") for i, v in enumerate(values)]
        owners = sorted({i["owner"].lower() for i in items if i["owner"]})
        return {"action_items": items, "owners": owners, "count": len(items)}

    def evaluate(
        self, response: Mapping[str, Any], truth: Mapping[str, Any]
    ) -> dict[str, EvalValue]:
        tp, fp, fn = match_items(response["action_items"], truth["action_items"])
        return {
            "action_items": fp == 0 and fn == 0,
            "owners": response["owners"] == truth["owners"],
            "count": response["count"] == truth["count"],
            "TP": tp,
            "FP": fp,
            "FN": fn,
        }

    def row_score(self, evaluation: Mapping[str, EvalValue]) -> float:
        return _f1(float(evaluation["TP"]), float(evaluation["FP"]), float(evaluation["FN"]))

    def columns(self) -> tuple[str, ...]:
        return ("action_items", "owners", "count", "TP", "FP", "FN")

    def sort(self, results: Sequence[PromptResult]) -> list[PromptResult]:
        def key(r: PromptResult) -> tuple[float, float, float]:
            return (-r.score, -r.counts.get("TP", 0), -r.counts.get("action_items", 0))

        return sorted(results, key=key)

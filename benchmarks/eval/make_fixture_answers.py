"""Write ``fixtures_answers.jsonl``: one plausible prediction per fixture question.

The reference answers come from ``fixtures/repos/*/questions.jsonl``. Each
question gets one kind of prediction, picked from a hash of its id (so adding
a question does not reshuffle the others):

* ``exact`` — the reference itself;
* ``paraphrase`` — the reference reworded (synonyms, no backticks, a lead-in);
* ``partial`` — only the reference's first clause;
* ``wrong`` — the reference answer of another question of the same repository;
* ``empty`` — an empty string (a model that answered nothing).

The output is deterministic: run ``python benchmarks/eval/make_fixture_answers.py``
and the file does not change unless the questions did.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "repos"
OUT = Path(__file__).resolve().parent / "fixtures_answers.jsonl"

KINDS = (
    ("exact", 25),
    ("paraphrase", 35),
    ("partial", 15),
    ("wrong", 15),
    ("empty", 10),
)
"""Prediction kind and its share (percent) of the questions."""

SYNONYMS = {
    "is": "gets",
    "are": "get",
    "calls": "invokes",
    "uses": "relies on",
    "runs": "executes",
    "defines": "declares",
    "returns": "gives back",
    "reads": "loads",
    "writes": "stores",
    "each": "every",
    "builds": "produces",
    "adds": "appends",
    "every": "each",
    "function": "func",
    "file": "source file",
}
LEAD_INS = ("Basically, ", "From what I can see, ", "In short: ", "")


def kind_of(question_id: str) -> str:
    bucket = int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 100
    for kind, share in KINDS:
        if bucket < share:
            return kind
        bucket -= share
    raise AssertionError("shares must add up to 100")


def paraphrase(text: str, question_id: str) -> str:
    words = [SYNONYMS.get(w, w) for w in text.replace("`", "").split(" ")]
    lead = LEAD_INS[int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % len(LEAD_INS)]
    body = " ".join(words)
    return lead + (body[:1].lower() + body[1:] if lead else body)


def first_clause(text: str) -> str:
    clause = re.split(r"[;:]\s|\.\s|, and |, which ", text, maxsplit=1)[0]
    return clause.rstrip(".") + "."


def predictions_for(rows: list[dict[str, str]], dataset: str) -> list[dict[str, str]]:
    out = []
    for i, row in enumerate(rows):
        reference = row["reference_answer"]
        kind = kind_of(row["id"])
        if kind == "exact":
            prediction = reference
        elif kind == "paraphrase":
            prediction = paraphrase(reference, row["id"])
        elif kind == "partial":
            prediction = first_clause(reference)
        elif kind == "wrong":
            prediction = rows[(i + 7) % len(rows)]["reference_answer"]
        else:
            prediction = ""
        out.append(
            {
                "id": row["id"],
                "question": row["query"],
                "prediction": prediction,
                "reference": reference,
                "kind": kind,
                "dataset": dataset,
            }
        )
    return out


def main() -> None:
    lines = []
    for questions in sorted(FIXTURES.glob("*/questions.jsonl")):
        rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
        rows = [r for r in rows if r.get("reference_answer")]
        for pred in predictions_for(rows, questions.parent.name):
            lines.append(json.dumps(pred, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} predictions to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

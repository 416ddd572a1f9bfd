"""A deterministic (prediction, references) corpus for the text-metric reference checks.

Built from real sentences — the ``reference_answer`` of every question in
``fixtures/repos/*/questions.jsonl`` (90 answers about three small code bases,
full of identifiers, paths and punctuation) — and seeded perturbations of
them, the kinds of differences a generated answer has:

* the answer itself (identity), a truncated copy, a copy with 1–3 words
  dropped, with adjacent words swapped, with words substituted from other
  answers, with case or punctuation changed, split into several lines
  (for ROUGE-Lsum), and bare code identifiers pulled out of the answer;
* multi-reference samples (the answer, a perturbed copy, an unrelated answer);
* hand-picked edge cases: empty and blank strings, one word, repeated words,
  non-ASCII letters and punctuation, numbers with separators, SGML entities,
  mteval's ``<skipped>`` and end-of-line hyphens, tabs and newlines.

``build_corpus()`` returns the same list on every call (``random.Random(seed)``).
Import it from the repository root:
``from tests.unit.metrics.answer.text.corpus import build_corpus``.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[5] / "fixtures" / "repos"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:/]+[A-Za-z_][A-Za-z0-9_]*)+|`[^`]+`")

EDGE_CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("the cat sat on the mat",)),
    ("the cat sat on the mat", ("",)),
    ("", ("",)),
    ("   ", ("a b c",)),
    ("a b c", (" \t ",)),
    ("word", ("word",)),
    ("word", ("other",)),
    ("the the the the", ("the cat the dog",)),
    ("the cat the dog", ("the the the the",)),
    ("Café naïve — «quoted» text, façade.", ('cafe naive - "quoted" text, facade.',)),
    ("Ελληνικά κείμενα και 東京 テキスト", ("Ελληνικά κείμενα",)),
    ("It costs 1,000.50 dollars in 2023-2024.", ("It costs 1,000.50 dollars in 2023 - 2024 .",)),
    ("x.,5 and a..b and 3-4-5 and -7", ("x . , 5 and a . . b and 3 - 4 - 5",)),
    ("&quot;quoted&quot; &amp; &lt;tag&gt; &amp;lt;", ('"quoted" & <tag> &lt;',)),
    ("one <skipped> two hyphen-\nated line\nbreak", ("one two hyphenated line break",)),
    ("tabs\tand\nnewlines\r\nand  spaces", ("tabs and newlines and spaces",)),
    ("foo.bar(baz, qux[0]) -> None", ("foo.bar(baz) returns None",)),
    ("İstanbul KELVIN sign and ß", ("istanbul kelvin sign and ss",)),
    ("running runs ran easily fairly", ("run running runner easy fair",)),
    ("A.\nB.\n\nC.", ("A.\nC.\nB.",)),
    ("end with hyphen-\n", ("end with hyphen",)),
    ("trailing spaces   ", ("trailing spaces",)),
    ("'quoted' it's a 'test'", ("it's a test",)),
)


@dataclass(frozen=True)
class TextPair:
    prediction: str
    references: tuple[str, ...]
    kind: str
    """How the prediction was made (identity, drop, swap, ... edge)."""


def reference_answers() -> list[str]:
    """The ``reference_answer`` strings of the fixture repositories, in file order."""
    answers: list[str] = []
    for path in sorted(FIXTURES.glob("*/questions.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                answer = json.loads(line).get("reference_answer")
                if answer:
                    answers.append(answer)
    return answers


def _drop(words: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(1, min(3, max(len(out) - 1, 1)))):
        if len(out) > 1:
            del out[rng.randrange(len(out))]
    return out


def _swap(words: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(1, 3)):
        if len(out) > 1:
            i = rng.randrange(len(out) - 1)
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _substitute(words: list[str], pool: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] = rng.choice(pool)
    return out


def _recase_and_repunctuate(text: str, rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        return text.lower()
    if choice == 1:
        return text.upper()
    if choice == 2:
        return re.sub(r"[^\w\s]", "", text)
    return re.sub(r"([,;.])", r" \1 ", text).replace("`", "'")


def _lines(text: str, rng: random.Random) -> str:
    parts = re.split(r"(?<=[.;,])\s+", text)
    if len(parts) == 1:
        words = text.split()
        cut = rng.randint(1, max(len(words) - 1, 1))
        parts = [" ".join(words[:cut]), " ".join(words[cut:])]
    return "\n".join(parts)


def _identifiers(text: str) -> str:
    found = [m.strip("`") for m in _IDENTIFIER.findall(text)]
    return " ".join(found) if found else text.split()[0]


def build_corpus(seed: int = 13) -> list[TextPair]:
    """About 600 pairs (see the module docstring); the same list for the same seed."""
    rng = random.Random(seed)
    answers = reference_answers()
    pool = sorted({w for a in answers for w in a.split()})
    pairs: list[TextPair] = []
    for index, answer in enumerate(answers):
        words = answer.split()
        other = answers[(index * 7 + 3) % len(answers)]
        pairs += [
            TextPair(answer, (answer,), "identity"),
            TextPair(" ".join(_drop(words, rng)), (answer,), "drop"),
            TextPair(" ".join(_swap(words, rng)), (answer,), "swap"),
            TextPair(" ".join(_substitute(words, pool, rng)), (answer,), "substitute"),
            TextPair(_recase_and_repunctuate(answer, rng), (answer,), "case-punctuation"),
            TextPair(_identifiers(answer), (answer,), "code"),
        ]
        if index % 2 == 0:
            half = " ".join(words[: max(1, len(words) // 2)])
            pairs.append(TextPair(half, (answer,), "truncate"))
            pairs.append(TextPair(_lines(answer, rng), (_lines(answer, rng),), "lines"))
        if index % 3 == 0:
            prediction = " ".join(_drop(_swap(words, rng), rng))
            lined = _lines(" ".join(_substitute(words, pool, rng)), rng)
            pairs.append(TextPair(prediction, (answer, lined, other), "multi-reference"))
            pairs.append(TextPair(other, (answer, "", other.lower()), "multi-reference"))
    for prediction, references in EDGE_CASES:
        pairs.append(TextPair(prediction, references, "edge"))
    return pairs

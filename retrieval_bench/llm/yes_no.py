"""Reading a model's yes/no answer, from its text or its first token's logprobs.

One reader for every yes/no question the toolkit asks a model: the
``llm-yesno``/``llm-logprob`` rerankers, the judge's ``yes_no`` extractor and
the factuality helpers (docs/stages.md, docs/metrics.md). Two readings of the
text exist on purpose:

* the *first word* (the rerankers): the reply must open with Yes or No
  ("yes." and "**YES**, it is" read yes; "The answer is yes" reads nothing);
* the *first whole word* YES or NO *anywhere* (the judge and the factuality
  helpers): "The claim is supported: yes" reads yes, "Yesterday" and "Nothing"
  do not count, and the first one wins ("Yes and no" reads yes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

YES_NO_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
"""A whole word YES or NO (group 1), any case."""
_WORD = re.compile(r"[^\W\d_]+")
_PUNCT = " \t\r\n.,;:!?\"'`*()[]<>"


def parse_yes_no(text: str, *, anywhere: bool = False) -> float | None:
    """1.0 for yes, 0.0 for no, None when ``text`` says neither.

    By default only the first word counts; ``anywhere=True`` takes the first whole
    word YES or NO wherever it stands (module docstring).
    """
    if anywhere:
        found = YES_NO_WORD.search(text)
        return None if found is None else _VALUES[found.group(1).casefold()]
    first = _WORD.search(text.casefold())
    return None if first is None else _VALUES.get(first.group(0))


_VALUES = {"yes": 1.0, "no": 0.0}


def p_yes(top: Mapping[str, float]) -> float | None:
    """P(Yes) renormalised over the Yes/No variants of ``top`` (token → logprob).

    None when neither appears (the caller falls back to the answer text).
    """
    yes = [lp for tok, lp in top.items() if tok.strip(_PUNCT).casefold() == "yes"]
    no = [lp for tok, lp in top.items() if tok.strip(_PUNCT).casefold() == "no"]
    if not yes and not no:
        return None
    if not no:
        return 1.0
    if not yes:
        return 0.0
    m = max(yes + no)
    if not math.isfinite(m):
        return None
    py = sum(math.exp(lp - m) for lp in yes)
    pn = sum(math.exp(lp - m) for lp in no)
    return py / (py + pn)

"""The mteval-v13a tokenizer: BLEU's standard tokenisation (sacrebleu's default "13a").

Implemented from the rules of NIST's ``mteval-v13a.pl`` (subroutine
``tokenization``, "language-independent" then "Western languages" part),
which is the tokenisation WMT results and sacrebleu's ``tokenize="13a"`` use
(Post, "A Call for Clarity in Reporting BLEU Scores", WMT 2018):

1. remove ``<skipped>``; join lines hyphenated at a line end (drop "-\\n");
   turn remaining newlines into spaces;
2. unescape ``&quot;`` ``&amp;`` ``&lt;`` ``&gt;`` (in that order);
3. pad the line with a space on each side;
4. put spaces around every ASCII punctuation character *except* the period,
   comma, apostrophe and hyphen — the character ranges ``{``–``~``,
   ``[``–`````, space–``&``, ``(``–``+``, ``:``–``@`` and ``/``;
5. split off a period or comma that follows a non-digit (the pair is
   rewritten, so one character cannot serve two matches, left to right);
6. split off a period or comma that precedes a non-digit (same rewriting);
7. split off a hyphen that follows a digit;
8. split on whitespace.

Case is kept (mteval's ``-c``; lowercasing is BLEU's separate option). Rule 4
is a ``str.translate`` table; rules 5–7 only run when the line has a period,
comma or hyphen. Rules 5 and 6 must keep the rewrite-the-pair semantics: in
"x.,5" the comma is not split by rule 5 (its left neighbour was consumed) and
stays glued to the "5".
"""

from __future__ import annotations

import re

_SPACED_PUNCTUATION = '{|}~[\\]^_` !"#$%&()*+:;<=>?@/'
_SPACE_AROUND = str.maketrans({c: f" {c} " for c in _SPACED_PUNCTUATION})
_PERIOD_COMMA_AFTER_NON_DIGIT = re.compile(r"([^0-9])([.,])")
_PERIOD_COMMA_BEFORE_NON_DIGIT = re.compile(r"([.,])([^0-9])")
_HYPHEN_AFTER_DIGIT = re.compile(r"(?<=[0-9])-")


def tokenize_13a(line: str) -> list[str]:
    """The tokens of ``line`` under the mteval-v13a rules (module docstring)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (
            line.replace("&quot;", '"')
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
        )
    line = f" {line} ".translate(_SPACE_AROUND)
    if "." in line or "," in line:
        line = _PERIOD_COMMA_AFTER_NON_DIGIT.sub(r"\1 \2 ", line)
        line = _PERIOD_COMMA_BEFORE_NON_DIGIT.sub(r" \1 \2", line)
    if "-" in line:
        line = _HYPHEN_AFTER_DIGIT.sub(" - ", line)
    return line.split()

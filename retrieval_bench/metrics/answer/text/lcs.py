"""Longest common subsequence helpers for ROUGE-L and ROUGE-Lsum (Lin 2004, §3).

* :func:`lcs_length` — the LCS length by the bit-parallel algorithm of
  Crochemore, Iliopoulos, Pinzon & Reid ("A fast and practical bit-vector
  algorithm for the longest common subsequence problem", IPL 2001; in the form
  of Hyyrö, "Bit-parallel LCS-length computation revisited", AWOCA 2004).
  With ``M[t]`` the bit mask of the positions of token ``t`` in ``a`` and
  ``V`` starting as all ones over ``len(a)`` bits, each token ``t`` of ``b`` does::

      U = V & M[t];   V = (V + U) | (V - U)

  and the LCS length is the number of zero bits left in the low ``len(a)``
  bits of ``V``. Python integers make this one pass of a few big-integer
  operations per token instead of a ``len(a) × len(b)`` table.
* :func:`lcs_positions` — the positions in ``a`` of *one* LCS, read back from
  the dynamic-programming table. Which LCS matters for the summary-level
  union, so the read-back takes the same path as rouge-score (and ROUGE-1.5.5):
  from the end, take a match when the tokens are equal, otherwise step back in
  ``b`` when that keeps a strictly longer LCS than stepping back in ``a``.
* :func:`union_lcs_hits` — summary-level LCS hits: for each reference
  sentence, the union of its LCS positions with every candidate sentence,
  counted at most as often as the token occurs in the whole reference and in
  the whole candidate (ROUGE-1.5.5 and rouge-score's guard against double
  counting, which Lin's formula does not spell out).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    if len(a) < len(b):
        a, b = b, a  # the shorter one drives the loop
    if not b:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << position)
    all_ones = (1 << len(a)) - 1
    v = all_ones
    get = masks.get
    for token in b:
        mask = get(token)
        if mask:
            u = v & mask
            v = (v + u) | (v - u)
    return len(a) - (v & all_ones).bit_count()


def lcs_positions(a: Sequence[str], b: Sequence[str]) -> list[int]:
    """Ascending positions in ``a`` of one LCS of ``a`` and ``b`` (rouge-score's choice)."""
    rows, cols = len(a), len(b)
    table = [[0] * (cols + 1)]
    for i in range(rows):
        above = table[i]
        row = [0] * (cols + 1)
        token = a[i]
        for j in range(cols):
            if token == b[j]:
                row[j + 1] = above[j] + 1
            else:
                left, up = row[j], above[j + 1]
                row[j + 1] = left if left > up else up
        table.append(row)
    positions: list[int] = []
    i, j = rows, cols
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            positions.append(i - 1)
            i -= 1
            j -= 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    positions.reverse()
    return positions


def union_lcs_hits(references: Sequence[Sequence[str]], candidates: Sequence[Sequence[str]]) -> int:
    """Summary-level LCS hits of reference sentences against candidate sentences."""
    reference_left: Counter[str] = Counter()
    candidate_left: Counter[str] = Counter()
    for sentence in references:
        reference_left.update(sentence)
    for sentence in candidates:
        candidate_left.update(sentence)
    hits = 0
    for sentence in references:
        union: set[int] = set()
        for candidate in candidates:
            union.update(lcs_positions(sentence, candidate))
        for position in sorted(union):
            token = sentence[position]
            if reference_left[token] > 0 and candidate_left[token] > 0:
                hits += 1
                reference_left[token] -= 1
                candidate_left[token] -= 1
    return hits

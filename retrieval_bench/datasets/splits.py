"""Dev/test splits of a questions file (docs/datasets.md#splits): the split a row
carries, or the one a hash of its id gives, so a run, a study script and the
learned rankers' training (``rbench ltr fit``) agree on which question is which."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from retrieval_bench.datasets.jsonl import load_examples
from retrieval_bench.types import Example


def with_hash_split(example: Example, test_fraction: float) -> Example:
    """``example`` with the split a hash of its id gives: ``test`` when the first 8
    bytes of sha256(id), read as a fraction of 2**64, fall below ``test_fraction``,
    else ``dev`` (any split the row carries is replaced; docs/datasets.md#splits)."""
    digest = hashlib.sha256(example.id.encode("utf-8")).digest()
    share = int.from_bytes(digest[:8], "big") / 2**64
    return replace(example, split="test" if share < test_fraction else "dev")


def question_splits(questions: Path, hash_split: float | None) -> dict[str, str]:
    """Question id → split of a questions file: the row's own (``all`` when it has
    none), or, with ``hash_split``, the one :func:`with_hash_split` gives."""
    out = {}
    for e in load_examples(questions).examples:
        if hash_split is not None:
            e = with_hash_split(replace(e, split=None), hash_split)
        out[e.id] = e.split or "all"
    return out

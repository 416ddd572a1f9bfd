""" "Lost at stage X" attribution (SPEC §2).

For each query, the gold files a stage dropped that its input had:

* a retriever's input is the whole snapshot, so its lost files are the gold
  files that exist in the corpus but are not among its candidates;
* a fusion's input is the union of the retrievers' candidate lists, and its
  output is what goes on (its top ``k``), so its lost files are gold files
  some retriever found that the fused top ``k`` no longer has.

Gold files absent from the snapshot are never counted as lost (they are
reported separately as missing gold).
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Example, Run


def files_in(run: Run, query_id: str, corpus: Corpus, k: int | None = None) -> set[str]:
    """Files of the top-``k`` chunks of one query."""
    return {corpus.by_id[c].path for c in run.ids(query_id, k) if c in corpus.by_id}


def lost_files(
    run: Run,
    parents: Sequence[Run],
    examples: Sequence[Example],
    corpus: Corpus,
    k: int | None = None,
    parent_k: int | None = None,
) -> dict[str, list[str]]:
    """Query id → sorted gold files lost at this stage (only non-empty entries).

    ``k`` cuts this stage's list, ``parent_k`` the parents' lists (None = all).
    """
    present = set(corpus.paths)
    lost: dict[str, list[str]] = {}
    for ex in examples:
        gold = {g for g in ex.gold_files if g in present}
        if parents:
            had: set[str] = set()
            for p in parents:
                had |= files_in(p, ex.id, corpus, parent_k)
            gold &= had
        dropped = gold - files_in(run, ex.id, corpus, k)
        if dropped:
            lost[ex.id] = sorted(dropped)
    return lost

"""Training questions for the learned rankers from the six `.py`-only histories
(docs/stages.md#learning-to-rank): the mined history questions of
``benchmarks/data/history-questions/`` without any commit that fixes a
swebench-lite-dev question (the fix commits found by
``benchmarks/studies/swebench_dev_functions.py``), written to
``benchmarks/data/history-pairs/<repo>.jsonl`` beside pytest, flask and requests.

Usage::

    python benchmarks/studies/ltr_training_pairs.py
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
REPOS = ("sqlfluff", "dask", "astroid", "pvlib", "pydicom", "marshmallow")


def main() -> None:
    fixes = {
        row["fix_commit"]
        for row in map(
            json.loads, (DATA / "swebench-lite-dev.functions.jsonl").read_text().splitlines()
        )
        if row.get("fix_commit")
    }
    for repo in REPOS:
        rows = [json.loads(x) for x in (DATA / "history-questions" / f"{repo}-history.jsonl")
                .read_text().splitlines() if x.strip()]  # fmt: skip
        kept = [r for r in rows if r.get("commit") not in fixes]
        out = DATA / "history-pairs" / f"{repo}.jsonl"
        out.write_text("".join(json.dumps(r) + "\n" for r in kept))
        print(
            f"{repo}: {len(kept)} of {len(rows)} questions ({len(rows) - len(kept)} fix a "
            f"swebench-lite-dev question) -> {out.relative_to(DATA.parents[1])}"
        )


if __name__ == "__main__":
    main()

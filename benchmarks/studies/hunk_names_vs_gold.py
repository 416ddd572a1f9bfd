"""How well git's hunk headers name the functions a commit changed: the names that
``similar-functions`` reads (docs/stages.md#similar-functions) against the gold functions
that parsing both sides of the patch gives (``rbench dataset mine``'s rule, LocAgent's
conventions: docs/metrics.md#conventions), on the mined questions of the six
ranker-training histories (``benchmarks/data/history-pairs/<repo>.jsonl``).

For each question with gold functions, in each of its gold files: the names the
question's own commit changed there (:mod:`retrieval_bench.retrieval.history_hunks`), each
resolved in the file as it was at the commit's parent as the stage resolves them
(:func:`~retrieval_bench.retrieval.history_functions.entities_named`), against the gold
functions of that file. Micro precision and recall over all (question, entity) pairs;
a question counts as *exact* when both sets are equal.

Usage::

    python benchmarks/studies/hunk_names_vs_gold.py [--data-root ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from swebench_dev_functions import DATA_ROOT

from retrieval_bench.datasets.gold_functions import at_commit, definitions
from retrieval_bench.retrieval.history_functions import entities_named, lines_by_name
from retrieval_bench.retrieval.history_hunks import hunk_log
from retrieval_bench.retrieval.history_log import head_sha, repo_log
from retrieval_bench.retrieval.line_entities import entities_by_line

PAIRS = Path(__file__).resolve().parents[1] / "data" / "history-pairs"
REPOS = ("sqlfluff", "dask", "astroid", "pvlib", "pydicom", "marshmallow")


def resolved(text: str, path: str, names: tuple[str, ...]) -> set[str]:
    """The entities of ``path`` (text ``text``) that ``names`` stand for, as the stage
    resolves them (module doc)."""
    by_name = lines_by_name(text, entities_by_line(path, text, definitions(text)))
    return {e for name in names for e in entities_named(by_name, path, name)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=DATA_ROOT)
    args = parser.parse_args()
    totals = {"hit": 0, "named": 0, "gold": 0, "exact": 0, "questions": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for name in REPOS:
            repo = Path(tmp) / f"{name}.git"
            bundle = args.data_root / "repos" / f"{name}.bundle"
            subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)], check=True)
            log = repo_log(repo)
            head = head_sha(repo)
            assert head is not None
            rows = {r: i for i, r in enumerate(log.chain(head))}
            hunks = hunk_log(log)
            questions = [json.loads(x) for x in (PAIRS / f"{name}.jsonl").read_text().splitlines()]
            gold_rows = (PAIRS / f"{name}.functions.jsonl").read_text().splitlines()
            gold = {r["id"]: r["gold_functions_locagent"] for r in map(json.loads, gold_rows)}
            counts = dict.fromkeys(totals, 0)
            for q in questions:
                wanted = set(gold.get(q["id"]) or ())
                row = log.rows.get(q["commit"])
                if not wanted or row is None or row not in rows:
                    continue
                (changed,) = hunks.names_of([row])
                parent = log.records[row].parent
                show = at_commit(repo, parent or "-")
                got: set[str] = set()
                for path, names in changed:
                    if any(g.startswith(path + ":") for g in wanted):
                        text = show(path)
                        got |= resolved(text, path, names) if text is not None else set()
                counts["questions"] += 1
                counts["hit"] += len(got & wanted)
                counts["named"] += len(got)
                counts["gold"] += len(wanted)
                counts["exact"] += got == wanted
            for k, v in counts.items():
                totals[k] += v
            report(name, counts)
    report("all", totals)


def report(name: str, c: dict[str, int]) -> None:
    precision, recall = c["hit"] / max(1, c["named"]), c["hit"] / max(1, c["gold"])
    exact = c["exact"] / max(1, c["questions"])
    print(f"{name}: {c['questions']} questions, precision {precision:.3f}, recall {recall:.3f}, "
          f"exact {exact:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

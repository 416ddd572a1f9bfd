"""Training questions from a repository's history (docs/stages.md#fit-dense).

Each change ``rbench dataset mine`` keeps (:mod:`~retrieval_bench.datasets.gitmine`:
bots, reverts, releases, short or repeated titles and changes of many files are
dropped) whose diff names gold functions becomes a question: its message, the
documents of its gold functions at the parent commit (the *positives*), and a
*pool* of unmodified documents of that same snapshot for the negatives: every
other definition of the changed files and of ``pool_files`` other Python files
drawn at random (seeded by the commit), at most ``pool_size`` of them (the changed
files' first: same-file definitions are the hardest negatives).
"""

from __future__ import annotations

import random
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_bench.datasets.gitmine import MineOptions, mine_examples
from retrieval_bench.datasets.gold_functions import at_commit
from retrieval_bench.dense_training.documents import Document, definition_documents, related


@dataclass(frozen=True)
class TrainingQuestion:
    """One change as a training question."""

    id: str
    repo: str
    commit: str
    """The change's commit (its parent is the snapshot the documents come from)."""
    query: str
    positives: tuple[Document, ...]
    pool: tuple[Document, ...]


@dataclass
class MinedQuestions:
    """The questions of one repository and why other changes were left out."""

    repo: str
    questions: list[TrainingQuestion] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    first_commit: str = ""
    last_commit: str = ""


def _python_paths(mirror: Path, commit: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "-r", "--name-only", commit, "--"],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    return [p for p in out.splitlines() if p.endswith(".py")]


def mine_questions(
    mirror: Path,
    repo: str,
    *,
    last: int,
    max_questions: int,
    pool_files: int,
    pool_size: int,
    seed: int,
    progress: Callable[[int, int, str], None] | None = None,
) -> MinedQuestions:
    """The newest ``max_questions`` questions among the newest ``last`` first-parent
    commits of ``mirror`` (module doc)."""
    mined = mine_examples(
        mirror, last=last, options=MineOptions(test_every=0), id_prefix=f"{repo}-"
    )
    result = MinedQuestions(repo, dropped=Counter(mined.dropped))
    examples = [e for e in mined.examples if e.gold_functions]
    result.dropped["no_gold_function"] += len(mined.examples) - len(examples)
    if len(examples) > max_questions:
        result.dropped["over_max_questions"] += len(examples) - max_questions
        examples = examples[-max_questions:]
    for done, example in enumerate(examples, 1):
        commit = str(example.meta["commit"])
        question = _question(
            mirror,
            repo,
            example.id,
            commit,
            example.query,
            example.gold_functions,
            pool_files,
            pool_size,
            seed,
        )
        if isinstance(question, str):
            result.dropped[question] += 1
        else:
            result.questions.append(question)
            result.first_commit = result.first_commit or commit
            result.last_commit = commit
        if progress is not None:
            progress(done, len(examples), "questions")
    return result


def _question(
    mirror: Path,
    repo: str,
    qid: str,
    commit: str,
    query: str,
    gold: tuple[str, ...],
    pool_files: int,
    pool_size: int,
    seed: int,
) -> TrainingQuestion | str:
    """The question of one change, or why it has none."""
    parent = f"{commit}^"
    show = at_commit(mirror, parent)
    gold_paths = list(dict.fromkeys(g.rsplit(":", 1)[0] for g in gold))
    rng = random.Random(f"{seed}:{commit}")
    others = [p for p in _python_paths(mirror, parent) if p not in gold_paths]
    sampled = rng.sample(others, min(pool_files, len(others)))
    documents: list[Document] = []
    for path in gold_paths + sampled:
        source = show(path)
        if source is not None:
            documents += definition_documents(path, source)
    wanted = set(gold)
    positives = tuple(d for d in documents if d.entity in wanted)
    if not positives:
        return "gold_function_not_found"
    pool = [d for d in documents if not any(related(d.entity, p.entity) for p in positives)]
    same = [d for d in pool if d.entity.rsplit(":", 1)[0] in gold_paths]
    rest = [d for d in pool if d.entity.rsplit(":", 1)[0] not in gold_paths]
    same = rng.sample(same, min(len(same), pool_size))  # the changed files' first
    pool = same + rng.sample(rest, min(len(rest), pool_size - len(same)))
    if not pool:
        return "no_negative"
    return TrainingQuestion(qid, repo, commit, query, positives, tuple(pool))

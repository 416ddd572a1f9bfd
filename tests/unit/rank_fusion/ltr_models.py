"""Small ``ltr`` model files for tests: fitted on made-up runs of two repositories,
logistic (hash folds) or LambdaMART cross-fitted by dataset (one fold per repository)."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_bench.rank_fusion.ltr import LTRModel
from retrieval_bench.rank_fusion.ltr_fit import TrainingSet, fit_ltr
from retrieval_bench.types import Run

FILES = [f"pkg/m{i}.py" for i in range(5)]


def training(sources: Sequence[str] = ("bm25", "files"), n: int = 40) -> TrainingSet:
    """The first source ranks the gold file first, the second files in a fixed order;
    questions ``repo-a:q…`` and ``repo-b:q…`` (two datasets)."""
    good, noise = sources
    data = TrainingSet(sorted(sources))
    runs: dict[str, dict[str, dict[str, float]]] = {good: {}, noise: {}}
    for i in range(n):
        repo = "repo-" + "ab"[i % 2]
        q = f"{repo}:q{i}"
        gold = FILES[i % 5]
        order = [gold, *[f for f in FILES if f != gold]]
        runs[good][q] = {f"file:{f}": float(5 - r) for r, f in enumerate(order)}
        runs[noise][q] = {f"file:{f}": float(5 - r) for r, f in enumerate(FILES)}
        data.gold[q] = frozenset({gold})
        data.datasets[q] = repo
    data.runs = {s: Run(s, scores) for s, scores in runs.items()}
    return data


def lambdarank_model(sources: Sequence[str] = ("bm25", "files")) -> LTRModel:
    """LambdaMART, one fold per repository (``fit-ltr --cross-fit dataset``)."""
    return fit_ltr(training(sources), objective="Acc@1", model="lambdarank", cross_fit="dataset")


def logistic_model(sources: Sequence[str] = ("bm25", "files")) -> LTRModel:
    """Logistic regression, two hash folds."""
    return fit_ltr(training(sources), folds=2, objective="Acc@1")

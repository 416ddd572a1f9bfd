"""The ``bm25`` rung on swebench-lite-dev agrees with an independent whole-file BM25.

The baseline lives entirely in this file (its own tokenizer, ``bm25s`` for the
scoring; nothing from retrieval_bench's tokenizer or BM25): one document per
``.py`` file of each question's snapshot tarball (path + content), code-aware
tokens, BM25 with the Lucene defaults (k1=1.5, b=0.75), files ranked by score.
The toolkit's chunk-level ``bm25`` rung, run through the bundled config, must
land within 5 Acc@5 points of it.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from tests.integration.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

QUESTIONS = "swebench-lite-dev/swebench-lite-dev.jsonl"
"""Under the benchmark data root (tests/benchmark_data.py), beside the snapshot tarballs."""
CONFIG = REPO_ROOT / "benchmarks" / "configs" / "swebench-lite-dev.yaml"
KS = (1, 3, 5, 10)
TOLERANCE = 0.05

_WORD = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def code_tokens(text: str) -> list[str]:
    """Split on non-alphanumerics; split snake_case and camelCase; lowercase; keep the
    compound identifier too; drop 1-character tokens."""
    out: list[str] = []
    for word in _WORD.findall(text):
        parts = [p for piece in word.split("_") for p in _CAMEL.findall(piece)]
        compound = word.strip("_").lower()
        if len(parts) > 1 and len(compound) > 1:
            out.append(compound)
        out.extend(p.lower() for p in parts if len(p) > 1)
    return out


def snapshot_files(tarball: Path) -> dict[str, str]:
    """Repository-relative path → text of every ``.py`` file (the top folder stripped)."""
    files: dict[str, str] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(".py"):
                continue
            rel = member.name.split("/", 1)[1] if "/" in member.name else member.name
            handle = tar.extractfile(member)
            if handle is not None:
                files[rel] = handle.read().decode("utf-8", errors="replace")
    return files


def whole_file_ranking(query: str, files: dict[str, str]) -> list[str]:
    """Every file, best BM25 score first (ties: path order)."""
    import bm25s

    paths = sorted(files)
    corpus = [code_tokens(p + "\n" + files[p]) or ["<empty>"] for p in paths]
    bm25 = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    bm25.index(corpus, show_progress=False)
    q = [t for t in code_tokens(query) if t in bm25.vocab_dict]
    if not q:
        return paths
    scores = bm25.get_scores(q)
    order = sorted(range(len(paths)), key=lambda i: (-float(scores[i]), paths[i]))
    return [paths[i] for i in order]


def score_ranking(ranked: list[str], gold: list[str]) -> dict[str, float]:
    rank = {path: i + 1 for i, path in enumerate(ranked)}
    gold_ranks = [rank.get(g) for g in gold]
    row = {f"Acc@{k}": float(all(r is not None and r <= k for r in gold_ranks)) for k in KS}
    found = [r for r in gold_ranks if r is not None]
    row["MRR"] = 1.0 / min(found) if found else 0.0
    return row


def mean_table(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = [f"Acc@{k}" for k in KS] + ["MRR"]
    return {key: sum(r[key] for r in per_query.values()) / len(per_query) for key in keys}


@pytest.mark.needs_data_root(QUESTIONS)
def test_bm25_rung_agrees_with_whole_file_bm25(workspace: Path, data_root: Path) -> None:
    questions = data_root / QUESTIONS
    pytest.importorskip("bm25s")
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.specs import StageSpec
    from retrieval_bench.workspace import Workspace

    rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    baseline: dict[str, dict[str, float]] = {}
    for row in rows:
        files = snapshot_files(questions.parent / row["snapshot"])
        baseline[row["id"]] = score_ranking(
            whole_file_ranking(row["query"], files), row["gold_files"]
        )

    cfg = load_config(CONFIG)
    cfg = cfg.model_copy(update={"retrievers": [StageSpec(name="bm25")], "fusions": []})
    result = run_benchmark(cfg, Workspace(workspace))
    ours_table = result.tables["all"]["bm25"]
    ours = {
        qid: metrics
        for outcome in result.outcomes
        for qid, metrics in outcome.per_query.get("bm25", {}).items()
    }

    base_table = mean_table(baseline)
    report = [f"{'':10}" + "".join(f"{m:>8}" for m in base_table)]
    report.append(f"{'toolkit':10}" + "".join(f"{ours_table[m]:8.3f}" for m in base_table))
    report.append(f"{'baseline':10}" + "".join(f"{base_table[m]:8.3f}" for m in base_table))
    for qid in sorted(baseline):
        diffs = [
            f"{m} toolkit {ours.get(qid, {}).get(m)} / baseline {baseline[qid][m]}"
            for m in (f"Acc@{k}" for k in KS)
            if ours.get(qid, {}).get(m) != baseline[qid][m]
        ]
        if diffs:
            report.append(f"{qid}: " + ", ".join(diffs))
    print("\n".join(report))

    assert result.counts["all"] == len(rows)
    assert abs(ours_table["Acc@5"] - base_table["Acc@5"]) <= TOLERANCE, "\n".join(report)

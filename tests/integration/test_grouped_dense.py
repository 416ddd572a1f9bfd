"""Dense retrieval over per-question snapshots of one repository, with the real
MiniLM: no LanceDB index per snapshot; vectors come from the content-addressed
embedding cache, so a snapshot embeds only the chunk texts no earlier one had,
and its results equal a single-snapshot run over the same tree
(docs/architecture.md#caches, docs/datasets.md#per-question-snapshots)."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from retrieval_bench.config import BenchmarkConfig, parse_config
from retrieval_bench.contracts.chunker import chunk_tree
from retrieval_bench.harness.run.prepare import make_chunker
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.workspace import Workspace
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = [pytest.mark.integration, needs_git]

REPO = "acme/shop"
JSONIO = "import json\n\n\ndef parse_json(text):\n    return json.loads(text)\n"
CART = (
    "class Cart:\n    def __init__(self):\n        self.prices = []\n\n"
    "    def total(self):\n        return sum(self.prices)\n\n"
    "    def add(self, item, price):\n        self.prices.append(price)\n"
)
DB = "def connect(url):\n    pool = Pool(url)\n    return pool\n"
MAIL = "def send_mail(to, body):\n    smtp = Smtp()\n    smtp.send(to, body)\n"
QUESTIONS = [
    ("q1", "parse json text", "shop/jsonio.py"),
    ("q2", "sum the prices in the cart", "shop/cart.py"),
    ("q3", "open a database connection pool", "shop/db.py"),
]


def _history(path: Path) -> tuple[GitRepo, list[str]]:
    """Three commits; each later one changes one file."""
    repo = GitRepo(path)
    files = {"shop/jsonio.py": JSONIO, "shop/cart.py": CART, "shop/db.py": DB, "shop/mail.py": MAIL}
    first = repo.commit("initial", files)
    taxed = CART.replace("sum(self.prices)", "sum(self.prices) * (1 + self.tax_rate)")
    second = repo.commit("tax in the cart total", {"shop/cart.py": taxed})
    pooled = DB.replace("Pool(url)", "Pool(url, size=4, timeout=30)")
    third = repo.commit("bigger pool", {"shop/db.py": pooled})
    return repo, [first, second, third]


def _export(repo: GitRepo, commit: str, dest: Path) -> Path:
    """The tree of ``commit`` as a plain folder."""
    data = subprocess.run(
        ["git", "archive", "--format=tar", commit],
        cwd=repo.path, capture_output=True, check=True, env=repo.env(),
    ).stdout  # fmt: skip
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _write(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(tmp_path: Path, dataset: dict[str, object], repos: dict[str, str]) -> BenchmarkConfig:
    data = {
        "name": "grouped-dense",
        "datasets": [dataset],
        "retrievers": [{"name": "dense"}, {"name": "bm25"}],
        "fusions": [{"name": "rrf"}],
        "repos": repos,
    }
    return parse_config(data, "grouped-dense.yaml", tmp_path)


def _run(
    cfg: BenchmarkConfig, home: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> BenchmarkResult:
    # its own embedding cache: the counts below start from nothing
    monkeypatch.setenv("RBENCH_HOME", str(home))
    monkeypatch.setenv("RBENCH_CACHE", str(cache))
    return run_benchmark(cfg, Workspace(home))


def _texts(root: Path, cfg: BenchmarkConfig) -> set[str]:
    chunker = make_chunker(cfg.chunker.name, **cfg.chunker.params())
    return {c.text for c in chunk_tree(root, chunker)}


def _index_files(ws: Workspace) -> list[Path]:
    return sorted(ws.index_dir.rglob("*")) if ws.index_dir.exists() else []


def _dense(result: BenchmarkResult, qid: str) -> dict[str, float]:
    (outcome,) = result.outcomes
    (stage,) = [s for s in outcome.stages if s.name == "dense"]
    assert not stage.failures, stage.failures
    return stage.run.scores[qid]


def test_snapshots_share_vectors_through_the_embedding_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, commits = _history(tmp_path / "origin")
    rows: list[dict[str, object]] = [
        {"id": qid, "query": query, "gold_files": [gold], "repo": REPO, "commit": commit}
        for (qid, query, gold), commit in zip(QUESTIONS, commits, strict=True)
    ]
    questions = _write(tmp_path / "questions.jsonl", rows)
    cfg = _config(tmp_path, {"name": "shop", "questions": str(questions)}, {REPO: str(repo.path)})
    home = tmp_path / "home"
    grouped = _run(cfg, home, tmp_path / "cache", monkeypatch)

    # no LanceDB table or manifest: no full copy of the vectors per snapshot
    assert _index_files(Workspace(home)) == []

    assert grouped.out_dir is not None
    prov = json.loads((grouped.out_dir / "config.json").read_text())["provenance"]
    entry = prov["datasets"]["shop"]
    groups = {g["query_ids"][0]: g for g in entry["snapshot_groups"]}
    assert [groups[q]["fingerprint"] for q in ("q1", "q2", "q3")] == commits

    # what each snapshot had to embed: the chunk texts no earlier snapshot had
    trees = [_export(repo, c, tmp_path / "trees" / c[:8]) for c in commits]
    seen: set[str] = set()
    for qid, tree in zip(("q1", "q2", "q3"), trees, strict=True):
        texts = _texts(tree, cfg)
        g = groups[qid]
        assert g["texts_embedded"] == len(texts - seen), (qid, g)
        assert g["texts_cached"] == len(texts & seen), (qid, g)
        assert g["vectors_reused"] == 0
        seen |= texts
    assert groups["q1"]["texts_cached"] == 0
    for qid in ("q2", "q3"):  # one file changed: a few chunks embedded, the rest cached
        assert 1 <= groups[qid]["texts_embedded"] < groups[qid]["texts_cached"], groups[qid]
    for key in ("texts_embedded", "texts_cached"):  # the dataset sums its groups
        assert entry[key] == sum(g[key] for g in groups.values())
    assert entry["texts_embedded"] == len(seen)

    # the same question asked of the same tree as a single-snapshot dataset
    # (LanceDB path, vectors computed afresh in another cache): the same scores
    alone = {k: v for k, v in rows[1].items() if k not in ("repo", "commit")}
    single_q = _write(tmp_path / "single.jsonl", [alone])
    single_cfg = _config(
        tmp_path, {"name": "shop", "questions": str(single_q), "snapshot": str(trees[1])}, {}
    )
    single_home = tmp_path / "single-home"
    single = _run(single_cfg, single_home, tmp_path / "single-cache", monkeypatch)
    assert any(p.name.endswith(".manifest.json") for p in _index_files(Workspace(single_home)))
    got, want = _dense(grouped, "q2"), _dense(single, "q2")
    assert want and sorted(got) == sorted(want)
    for cid, score in want.items():
        assert got[cid] == pytest.approx(score, abs=1e-6), cid
    assert sorted(got, key=lambda c: (-got[c], c)) == sorted(want, key=lambda c: (-want[c], c))

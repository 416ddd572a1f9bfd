"""The ``ltr`` fusion end to end on real per-commit snapshots
(docs/stages.md#learning-to-rank): ``rbench run`` stores the sources' runs,
``rbench fit-ltr`` fits a cross-fitted model file from them (dev questions
only), and a second ``rbench run`` with ``{name: ltr, model_file: ...}`` scores
every question with the model that did not see it — the same scores as the
stored model gives offline on the stored source runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_bench.cli import main
from retrieval_bench.rank_fusion.ltr import LTRModel, fuse_with
from retrieval_bench.store.trec import read_run
from retrieval_bench.workspace import Workspace
from tests.unit.datasets.gitrepo import GitRepo, needs_git

pytestmark = needs_git

SOURCES = ("bm25", "files")
TOPICS = [
    ("cache", "class LruCache:\n    def evict_oldest(self):\n        return self.items.pop()\n"),
    ("retry", "def retry_request(fn, times):\n    return fn()\n"),
    ("config", "def load_config(path, strict=False):\n    return open(path).read()\n"),
    ("pool", "class SocketPool:\n    def borrow(self):\n        return self.free.pop()\n"),
    ("parser", "def parse_header(line):\n    return line.split(':', 1)\n"),
    ("logger", "def log_event(name, level):\n    print(name, level)\n"),
]


def _history(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A repository whose every commit edits one module; a question per commit,
    with a test file beside each module that mentions the same words."""
    repo = GitRepo(tmp_path / "proj")
    files = {f"core/{name}.py": text for name, text in TOPICS}
    files |= {f"tests/test_{name}.py": f"# {text}" for name, text in TOPICS}
    repo.commit("start", files)
    rows: list[dict[str, Any]] = []
    for i in range(18):
        name, text = TOPICS[i % len(TOPICS)]
        sha = repo.commit(f"change {i}", {f"core/{name}.py": text + f"# rev {i}\n"})
        words = text.split("\n")[0].replace("(", " ").replace(":", " ")
        rows.append({"id": f"q{i:02d}", "query": f"fix {words} {name}",
                     "gold_files": [f"core/{name}.py"], "commit": sha,
                     "split": "test" if i % 3 == 0 else "dev"})  # fmt: skip
    bundle = tmp_path / "proj.bundle"
    repo.git("bundle", "create", str(bundle), "--all")
    return bundle, rows


def _config(tmp_path: Path, bundle: Path, questions: Path, fusions: list[dict[str, Any]]) -> Path:
    cfg = {
        "name": "ltr-history",
        "datasets": [{"name": "proj", "questions": str(questions), "repo": "org/proj"}],
        "repos": {"org/proj": str(bundle)},
        "chunker": {"name": "ast", "budget": 128},
        "retrievers": [
            {"name": "bm25"},
            {"name": "bm25-files", "id": "files", "doc": "chunks", "aggregate": "max"},
        ],
        "fusions": fusions,
        "candidates": 20,
    }
    path = tmp_path / f"cfg{len(fusions)}.json"
    path.write_text(json.dumps(cfg))
    return path


def test_fit_then_fuse_on_per_commit_snapshots(
    tmp_path: Path, workspace: Path, capsys: Any
) -> None:
    bundle, rows = _history(tmp_path)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = ["--workspace", str(workspace)]

    assert main([*ws, "run", str(_config(tmp_path, bundle, questions, []))]) == 0
    (train_run,) = [p.name for p in Workspace(workspace).results_dir.iterdir()]
    model_file = tmp_path / "ltr.json"
    code = main([*ws, "fit-ltr", train_run, "--sources", ",".join(SOURCES), "--split", "dev",
                 "--folds", "3", "--out", str(model_file)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "12 questions" in printed and "selection (Acc@5, out of fold)" in printed
    model = LTRModel.load(model_file)
    trained = {q for _, ids in model.folds for q in ids}
    assert trained == {r["id"] for r in rows if r["split"] == "dev"}
    assert model.meta["training"]["runs"][0]["run"] == train_run
    # the file says how to rebuild it: the fitting command, defaults included
    assert model.meta["training"]["command"] == (
        f"rbench fit-ltr {train_run} --sources {','.join(SOURCES)} --model logistic "
        f"--cross-fit hash --folds 3 --C 1.0 --seed 0 --objective Acc@5 --split dev "
        f"--out {model_file}"
    )
    # the test files mention the same words, so the learned test prior is negative
    assert model.coefficients()["prior:test"] < 0

    cfg = _config(tmp_path, bundle, questions, [{"name": "ltr", "model_file": str(model_file)}])
    assert main([*ws, "run", str(cfg)]) == 0
    (eval_run,) = [p for p in Workspace(workspace).results_dir.iterdir() if p.name != train_run]
    stored = eval_run / "runs" / "proj"
    live = read_run(stored / "ltr.trec")
    sources = [read_run(stored / f"{s}.trec", s) for s in SOURCES]
    offline, counts = fuse_with(model, sources, "ltr", 20)
    assert counts == {"held_out_fold": 12, "full_model": 6}
    assert sorted(live.scores) == sorted(r["id"] for r in rows)
    for q in live.scores:
        assert live.ids(q) == offline.ids(q), q
        assert all(d.startswith("file:") for d in live.ids(q))
    first = {q: live.ids(q)[0] for q in live.scores}
    assert sum(first[r["id"]] == "file:" + r["gold_files"][0] for r in rows) >= 15

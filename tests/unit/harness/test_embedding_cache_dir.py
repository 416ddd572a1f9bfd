"""The dense retriever's embedding cache follows the run's workspace
(``rbench --workspace DIR run``), not the workspace the environment or the
working directory implies; a ``cache_dir`` in the stage's config and
``$RBENCH_CACHE`` still win (docs/architecture.md#caches).

The model is a counting bag-of-words fake (tests/unit/index/fakes.py) standing in
for MiniLM, both behind the dense retriever and behind the LanceDB index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.harness.run.stages import StageContext
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.specs import StageSpec
from retrieval_bench.stage_graph import StageNode
from retrieval_bench.workspace import Workspace
from tests.unit.index.fakes import CountingEmbedder

CACHE_FILE = Path("cache") / "embeddings" / "embeddings.sqlite"
ALPHA = {"auth.py": "def verify_token(token):\n    return token == 'ok'\n", "db.py": "x = 1\n"}
BETA = {"cart.py": "def add_item(cart, item):\n    cart.append(item)\n", "db.py": "y = 2\n"}


class FakeModel(CountingEmbedder):
    """Takes the sentence-transformers embedder's arguments and ignores them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("retrieval_bench.retrieval.dense.SentenceTransformerEmbedder", FakeModel)
    monkeypatch.setattr("retrieval_bench.index.embed.SentenceTransformerEmbedder", FakeModel)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory of its own, with no RBENCH_HOME / RBENCH_CACHE set."""
    monkeypatch.delenv("RBENCH_HOME", raising=False)
    monkeypatch.delenv("RBENCH_CACHE", raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _config(tmp_path: Path, grouped: bool, dense: dict[str, Any]) -> Path:
    """A one-dataset dense config: one snapshot folder, or (``grouped``) a snapshot
    folder per question (the per-snapshot groups of snapshot_work.run_group)."""
    alpha = _tree(tmp_path / "alpha", ALPHA)
    rows: list[dict[str, Any]] = [
        {"id": "a1", "query": "verify token", "gold_files": ["auth.py"]},
        {"id": "a2", "query": "where is x set", "gold_files": ["db.py"]},
    ]
    dataset: dict[str, Any] = {"name": "d", "questions": str(tmp_path / "q.jsonl")}
    if grouped:
        beta = _tree(tmp_path / "beta", BETA)
        rows = [{**r, "snapshot": str(alpha)} for r in rows]
        rows.append(
            {"id": "b1", "query": "add item to cart", "gold_files": ["cart.py"],
             "snapshot": str(beta)}
        )  # fmt: skip
    else:
        dataset["snapshot"] = str(alpha)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"name": "dense-ws", "datasets": [dataset], "retrievers": [dense, {"name": "bm25"}]}
    path = tmp_path / "dense-ws.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


@pytest.mark.usefixtures("fake_model")
@pytest.mark.parametrize("grouped", [False, True], ids=["one-snapshot", "per-question"])
def test_dense_cache_goes_to_the_run_workspace(
    tmp_path: Path, elsewhere: Path, grouped: bool
) -> None:
    home = tmp_path / "home"
    cfg = _config(tmp_path, grouped, {"name": "dense"})
    assert main(["--workspace", str(home), "run", str(cfg)]) == EXIT_OK
    assert (home / CACHE_FILE).is_file()
    assert not (elsewhere / ".rbench").exists()  # nothing in the cwd's default workspace


@pytest.mark.usefixtures("fake_model")
def test_cache_dir_in_the_config_wins(tmp_path: Path, elsewhere: Path) -> None:
    home, own = tmp_path / "home", tmp_path / "own-cache"
    cfg = _config(tmp_path, True, {"name": "dense", "cache_dir": str(own)})
    assert main(["--workspace", str(home), "run", str(cfg)]) == EXIT_OK
    assert (own / "embeddings.sqlite").is_file()
    assert not (home / CACHE_FILE).exists()  # grouped: no LanceDB index either
    assert not (elsewhere / ".rbench").exists()


@pytest.mark.usefixtures("fake_model")
def test_stage_context_gives_cache_dir_to_stages_that_declare_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RBENCH_CACHE", raising=False)
    ws = Workspace(tmp_path / "home")
    ctx = StageContext(ds=None, ws=ws)  # type: ignore[arg-type]

    def made(**params: Any) -> Any:
        return ctx.create(RETRIEVERS, StageNode("retriever", StageSpec.model_validate(params), ()))

    assert made(name="dense").cache_dir == ws.root / "cache" / "embeddings"
    assert made(name="dense", cache_dir="x").cache_dir == Path("x")  # the config wins
    assert RETRIEVERS.type_of("dense-adapted").uses_embedding_cache
    assert RETRIEVERS.type_of("hyde").uses_embedding_cache
    assert not RETRIEVERS.type_of("bm25").uses_embedding_cache
    made(name="bm25")  # takes no cache_dir, is given none
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "shared"))  # the env beats the workspace
    assert made(name="dense").cache_dir == tmp_path / "shared" / "embeddings"
    alone = StageContext(ds=None)  # type: ignore[arg-type]
    dense = alone.create(RETRIEVERS, StageNode("retriever", StageSpec(name="dense"), ()))
    assert isinstance(dense, DenseRetriever) and dense.cache_dir is None  # its own default

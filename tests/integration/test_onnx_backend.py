"""The dense retriever's ONNX Runtime backends against PyTorch, for real
(docs/stages.md#dense): the export from the packaged weights, the vectors'
agreement, the separate cache keys, and a run that builds no LanceDB index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.config import StageSpec
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.prepare import needs_vectors
from retrieval_bench.index.embed import SentenceTransformerEmbedder, default_model_path
from retrieval_bench.index.onnx_backend import OnnxEmbedder, export_dir
from retrieval_bench.retrieval.dense import DenseRetriever

TEXTS = [
    "def parse_json_line(self, raw):\n    return json.loads(raw)",
    "class HTTPServer(BaseServer):\n    '''Serve HTTP.'''\n    timeout = 30",
    "import os\n" + "x = os.path.join('a', 'b')\n" * 200,  # longer than the model's 256
    "",
    "ünïcödé ✓ 中文 emoji 😀",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.mark.parametrize(("backend", "floor"), [("onnx", 0.9999), ("onnx-int8", 0.97)])
def test_onnx_vectors_agree_with_torch(models: Path, backend: str, floor: float) -> None:
    torch_vectors = SentenceTransformerEmbedder().embed(TEXTS)
    embedder = OnnxEmbedder(default_model_path(), models, backend=backend, name="all-MiniLM-L6-v2")
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == torch_vectors.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = np.sum(vectors * torch_vectors, axis=1)
    assert cosine.min() >= floor, cosine
    assert embedder.name == f"all-MiniLM-L6-v2@{backend}"
    folder = export_dir(default_model_path(), models)
    assert sorted(p.name for p in folder.iterdir()) == ["model-int8.onnx", "model.onnx"]
    # the batch's padding does not change a text's vector
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert np.allclose(alone, vectors, atol=1e-5)


def test_dense_with_an_onnx_backend_is_cached_apart_and_needs_no_lancedb_index(
    tmp_path: Path,
) -> None:
    dense = DenseRetriever(backend="onnx-int8", cache_dir=str(tmp_path / "embeddings"))
    assert dense.embedder.name == "all-MiniLM-L6-v2@onnx-int8"
    assert isinstance(dense.embedder, OnnxEmbedder)
    assert dense.embedder.models_dir == tmp_path / "models"
    assert not needs_vectors([StageSpec(name="dense", backend="onnx")])
    assert needs_vectors([StageSpec(name="dense")])
    with pytest.raises(ConfigError, match="sentence-transformers models only"):
        DenseRetriever(backend="onnx", model="e5-small")
    with pytest.raises(ConfigError, match="choose one of torch, onnx, onnx-int8"):
        DenseRetriever(backend="tensorrt")

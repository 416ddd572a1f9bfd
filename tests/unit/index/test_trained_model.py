"""A ``fit-dense`` model folder's manifest as the ``dense`` stage reads it
(docs/stages.md#fit-dense): the query prefix, the path before a chunk, its cache
name, and one-line errors for a manifest it cannot read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.trained_model import (
    FORMAT,
    MANIFEST,
    EmbeddingFormat,
    embedding_format,
    shipped_onnx,
)
from retrieval_bench.retrieval.dense import DenseRetriever, trained_model_name
from retrieval_bench.types import Chunk


def _folder(tmp_path: Path, **manifest: object) -> Path:
    folder = tmp_path / "code-model"
    folder.mkdir()
    data = {"format": FORMAT, "inference": {"query_prefix": "query: ", "document_path": True}}
    (folder / MANIFEST).write_text(json.dumps({**data, **manifest}))
    return folder


def test_the_format_puts_the_prefix_and_the_path() -> None:
    fmt = EmbeddingFormat("query: ", True)
    assert fmt.query("why") == "query: why"
    assert fmt.document("a/b.py", "def f(): pass") == "a/b.py\ndef f(): pass"
    assert EmbeddingFormat().plain and not fmt.plain
    assert EmbeddingFormat().document("a.py", "x") == "x"


def test_a_folder_without_a_manifest_is_plain(tmp_path: Path) -> None:
    assert embedding_format(tmp_path) == EmbeddingFormat()
    assert embedding_format(None) == EmbeddingFormat()
    assert trained_model_name(tmp_path) == tmp_path.name
    assert shipped_onnx(tmp_path, quantized=True) is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "cannot be read"),
        (json.dumps([1, 2]), "format 'list'"),
        (json.dumps({"format": "other/9"}), "format 'other/9'"),
        (json.dumps({"format": FORMAT, "inference": {"query_prefix": 3}}), "must be a string"),
        (json.dumps({"format": FORMAT, "inference": {"document_path": "yes"}}), "true or false"),
    ],
)
def test_a_manifest_it_cannot_read_is_one_line(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / MANIFEST).write_text(text)
    with pytest.raises(ConfigError, match=error) as caught:
        embedding_format(tmp_path)
    assert "\n" not in str(caught.value)


def test_the_cache_name_carries_the_weights_fingerprint(tmp_path: Path) -> None:
    folder = _folder(tmp_path, fingerprint="0123456789abcdef" * 4)
    assert trained_model_name(folder) == "code-model-0123456789ab"
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model-int8.onnx").write_bytes(b"x")
    assert shipped_onnx(folder, quantized=True) == folder / "onnx" / "model-int8.onnx"
    assert shipped_onnx(folder, quantized=False) is None


class _Recorder:
    """An embedder that records what it was asked to embed."""

    name = "recorder"
    dim = 2

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))


def test_dense_embeds_as_the_model_was_trained(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    recorder = _Recorder()
    dense = DenseRetriever(embedder=recorder, model_path=str(folder),
                           cache_dir=str(tmp_path / "embeddings"))  # fmt: skip
    chunk = Chunk(id="pkg/a.py:1-1:0", path="pkg/a.py", start_line=1, end_line=1,
                  language="python", kind="function", symbol="f", text="def f(): pass",
                  n_tokens=4)  # fmt: skip
    dense.index(Corpus(root=tmp_path, chunks=[chunk]))
    dense.search({"q1": "f is broken"}, 5)
    assert recorder.texts == ["pkg/a.py\ndef f(): pass", "query: f is broken"]
    # a chunk embedded with its path is not the LanceDB index's vector
    assert not DenseRetriever.uses_vector_index_for({"model_path": str(folder)})
    assert DenseRetriever.uses_vector_index_for({"model_path": str(tmp_path / "plain")})


def test_an_onnx_only_folder_refuses_the_torch_backend(tmp_path: Path) -> None:
    folder = _folder(tmp_path, onnx_only=True)
    with pytest.raises(ConfigError, match="use backend: onnx-int8"):
        DenseRetriever(model_path=str(folder))

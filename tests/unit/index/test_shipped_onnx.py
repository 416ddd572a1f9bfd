"""A ``fit-dense`` model folder's own ONNX file (docs/stages.md#fit-dense): used as it
is, and when ONNX Runtime cannot parse it, one line that names the file, the folder
left where it is (it is the user's, not derived data)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import default_model_path
from retrieval_bench.index.onnx_backend import OnnxEmbedder


def test_a_damaged_shipped_export_is_one_line_and_stays(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        shutil.copy(default_model_path() / name, folder / name)
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model-int8.onnx").write_bytes(b"not a model")
    embedder = OnnxEmbedder(folder, tmp_path / "models", backend="onnx-int8", name="m")
    with pytest.raises(ConfigError, match="cannot be read by ONNX Runtime") as caught:
        embedder.embed(["def f(): pass"])
    assert "\n" not in str(caught.value) and "model-int8.onnx" in str(caught.value)
    assert (folder / "onnx" / "model-int8.onnx").read_bytes() == b"not a model"
    assert not (tmp_path / "models").exists()  # nothing exported in its place

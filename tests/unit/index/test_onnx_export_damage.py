"""A damaged or incomplete ONNX export is derived data: moved aside with one warning
and exported again, and then kept (index/onnx_backend.py, docs/architecture.md#caches).

The export itself (``torch.onnx.export`` of MiniLM) is replaced by one that writes a
tiny valid ONNX graph, so ONNX Runtime really parses what is on disk."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.index import onnx_backend
from retrieval_bench.index.onnx_backend import OnnxEmbedder, export_dir, exported_model


def _tiny_model() -> bytes:
    """A graph with the export's inputs and output: each token's vector is its id,
    four times (so a text's mean vector is a multiple of (1, 1, 1, 1))."""
    import onnx
    from onnx import TensorProto, helper

    names = ["input_ids", "attention_mask", "token_type_ids"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [None, None]) for n in names]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [None, None, 4])
    ones = helper.make_tensor("ones", TensorProto.FLOAT, [1, 1, 4], [1.0] * 4)
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["ids", "axes"], ["column"]),
        helper.make_node("Mul", ["column", "ones"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(nodes, "tiny", inputs, [out], initializer=[ones, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


@pytest.fixture
def exports(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Where the (fake) export ran, once per call."""
    tiny = _tiny_model()
    calls: list[Path] = []

    def fake_export(model_path: Path, new: Path) -> None:
        calls.append(new)
        new.mkdir(parents=True)
        for name in ("model.onnx", "model-int8.onnx"):
            (new / name).write_bytes(tiny)

    monkeypatch.setattr(onnx_backend, "export_onnx", fake_export)
    return calls


def _model_folder(tmp_path: Path) -> Path:
    """A model folder with what :class:`OnnxEmbedder` reads besides the export."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    folder = tmp_path / "all-MiniLM-L6-v2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 16}')
    tok = Tokenizer(WordLevel({"[UNK]": 0, "parse": 1, "json": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def _embedder(model: Path, models: Path, backend: str) -> OnnxEmbedder:
    return OnnxEmbedder(model, models, backend=backend, name="all-MiniLM-L6-v2", threads=1)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("damaged", ["model-int8.onnx", "model.onnx"])
def test_a_garbage_export_file_is_moved_aside_and_exported_again(
    tmp_path: Path, exports: list[Path], caplog: pytest.LogCaptureFixture, damaged: str
) -> None:
    model, models = _model_folder(tmp_path), tmp_path / "models"
    backend = "onnx-int8" if damaged == "model-int8.onnx" else "onnx"
    dest = export_dir(model, models)
    first = _embedder(model, models, backend).embed(["parse json", "json"])
    assert len(exports) == 1 and np.allclose(first, 0.5)  # unit vectors of equal parts
    (dest / damaged).write_bytes(b"not a protobuf \xff\x00" * 50)
    caplog.set_level(logging.WARNING)
    again = _embedder(model, models, backend).embed(["parse json", "json"])
    assert np.array_equal(again, first) and len(exports) == 2
    (warning,) = _warnings(caplog)
    assert warning.startswith(f"ONNX export {dest} was corrupt ({damaged}: ")
    assert "INVALID_PROTOBUF" in warning and "; rebuilding" in warning
    (aside,) = [p for p in models.iterdir() if p.name.startswith(f"{dest.name}.corrupt-")]
    assert (aside / damaged).read_bytes().startswith(b"not a protobuf")
    assert sorted(p.name for p in dest.iterdir()) == ["model-int8.onnx", "model.onnx"]
    # the new export is kept: the next embedder neither warns nor exports
    caplog.clear()
    _embedder(model, models, backend).embed(["json"])
    assert len(exports) == 2 and _warnings(caplog) == []


def test_a_missing_int8_file_is_exported_and_kept(
    tmp_path: Path, exports: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    model, models = _model_folder(tmp_path), tmp_path / "models"
    dest = export_dir(model, models)
    exported_model(model, models, quantized=False)
    (dest / "model-int8.onnx").unlink()  # model.onnx alone
    caplog.set_level(logging.WARNING)
    assert exported_model(model, models, quantized=False) == dest / "model.onnx"
    assert len(exports) == 2
    assert sorted(p.name for p in dest.iterdir()) == ["model-int8.onnx", "model.onnx"]
    (warning,) = _warnings(caplog)
    assert warning.startswith(f"ONNX export {dest} was corrupt (no model-int8.onnx); moved to")
    for quantized in (False, True, True):  # kept: never exported again
        exported_model(model, models, quantized)
    _embedder(model, models, "onnx-int8").embed(["json"])
    assert len(exports) == 2 and len(_warnings(caplog)) == 1


def test_another_refusal_of_onnx_runtime_moves_nothing(
    tmp_path: Path, exports: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime

    model, models = _model_folder(tmp_path), tmp_path / "models"

    def refuse(*_: object, **__: object) -> None:
        raise MemoryError("no memory")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    with pytest.raises(MemoryError):
        _embedder(model, models, "onnx-int8").embed(["json"])
    assert [p.name for p in models.iterdir() if ".corrupt-" in p.name] == []
    assert len(exports) == 1


def test_a_process_opens_one_export_once_and_a_rewritten_one_again(
    tmp_path: Path, exports: list[Path]
) -> None:
    """A run builds a dense stage per snapshot: the second embedder of the same file
    reuses the session; a file rewritten since (other size or time) is opened anew."""
    model, models = _model_folder(tmp_path), tmp_path / "models"
    first, second = _embedder(model, models, "onnx-int8"), _embedder(model, models, "onnx-int8")
    assert first._load()[0] is second._load()[0]
    assert _embedder(model, models, "onnx")._load()[0] is not first._load()[0]  # other file
    path = export_dir(model, models) / "model-int8.onnx"
    path.write_bytes(path.read_bytes())  # same bytes, a new modification time
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    third = _embedder(model, models, "onnx-int8")
    assert third._load()[0] is not first._load()[0]
    assert np.array_equal(third.embed(["parse json"]), first.embed(["parse json"]))
    assert len(exports) == 1

"""A model folder written by ``rbench fit-dense``: what the ``dense`` stage reads of its
manifest so that it embeds as the model was trained (docs/stages.md#fit-dense).

The folder is a sentence-transformers folder (or, shipped, only its tokenizer,
configuration and an ``onnx/model-int8.onnx``) plus :data:`MANIFEST`, a JSON file
naming the base model, the training histories, the data's fingerprint, the
hyper-parameters and two settings inference must repeat:

* ``query_prefix``: text put before every query (SweRank's instruction prefix);
* ``document_path``: whether a document was embedded as ``"<path>\\n<text>"`` (the
  file's path before the code: CoRet reports about ten points lost without it).

A folder without the manifest is any sentence-transformers model: no prefix, text alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError

MANIFEST = "rbench-model.json"
"""The manifest's file name inside a model folder."""
FORMAT = "rbench-dense-model/1"
"""The manifest's ``format``: bumped when inference must read it differently."""
ONNX_DIR = "onnx"
"""Where a model folder keeps a ready ONNX export (``model.onnx``, ``model-int8.onnx``)."""


@dataclass(frozen=True)
class EmbeddingFormat:
    """How a model wants its texts: a prefix before queries, the path before documents."""

    query_prefix: str = ""
    document_path: bool = False

    def query(self, text: str) -> str:
        return self.query_prefix + text

    def document(self, path: str, text: str) -> str:
        return f"{path}\n{text}" if self.document_path else text

    @property
    def plain(self) -> bool:
        return not self.query_prefix and not self.document_path


def read_manifest(model_path: str | Path) -> dict[str, Any] | None:
    """The manifest of a model folder, None when it has none; a manifest that is not a
    JSON object of this :data:`FORMAT` is a one-line :class:`ConfigError`."""
    path = Path(model_path) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"model manifest {path} cannot be read ({exc}); re-run fit-dense"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(f"model manifest {path}: format {found!r}, expected {FORMAT!r}")
    return data


def embedding_format(model_path: str | Path | None) -> EmbeddingFormat:
    """The :class:`EmbeddingFormat` a model folder's manifest asks for (plain without one)."""
    if model_path is None:
        return EmbeddingFormat()
    data = read_manifest(model_path)
    if data is None:
        return EmbeddingFormat()
    inference = data.get("inference", {})
    prefix, with_path = inference.get("query_prefix", ""), inference.get("document_path", False)
    if not isinstance(prefix, str) or not isinstance(with_path, bool):
        raise ConfigError(
            f"model manifest {Path(model_path) / MANIFEST}: inference.query_prefix must be a "
            "string and inference.document_path true or false"
        )
    return EmbeddingFormat(prefix, with_path)


def shipped_onnx(model_path: str | Path, quantized: bool) -> Path | None:
    """The folder's own ONNX file for the backend (``onnx/model-int8.onnx`` or
    ``onnx/model.onnx``), None when it ships none (then it is exported from the weights)."""
    path = Path(model_path) / ONNX_DIR / ("model-int8.onnx" if quantized else "model.onnx")
    return path if path.is_file() else None

"""ONNX Runtime backend for the sentence-transformers embedders (docs/stages.md#dense).

A dense retriever with ``backend: onnx`` (or ``onnx-int8``) embeds with ONNX
Runtime on the CPU instead of PyTorch. The model is exported offline from the
packaged weights — no hub, no download — once per model folder, into
``<cache>/models/`` (built aside and renamed into place, so an interrupted export
is never used): ``torch.onnx.export`` of the transformer (inputs ``input_ids``,
``attention_mask``, ``token_type_ids``; output the last hidden state), and for
``onnx-int8`` ONNX Runtime's dynamic quantization of that graph (int8 weights with
one scale per output channel, activations quantized per batch at run time).

Inference does what the sentence-transformers pipeline of all-MiniLM-L6-v2 does
(``modules.json``: Transformer → mean Pooling → Normalize): the model's own
``tokenizer.json`` (``[CLS] … [SEP]``, truncated to ``max_seq_length`` word
pieces), the token vectors averaged, and the mean L2-normalised — one text per
run, so there is no padding and a vector never depends on its batch. Vectors are keyed in the
embedding cache by model *and* backend (``all-MiniLM-L6-v2@onnx-int8``), so the
backends never share vectors; ``benchmarks/perf/onnx_vs_torch.py`` measures the
speed and the agreement with PyTorch.

The export is derived data, like the caches (docs/architecture.md#caches): a folder
that lacks one of its two files (the new export could not be renamed over it, so it
was redone and dropped on every run), or whose file ONNX Runtime cannot parse (a
traceback on every run), is moved aside to ``<folder>.corrupt-<UTC time>`` with one
warning and exported again (:func:`exported_model`, :func:`open_session`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.errors import ConfigError
from retrieval_bench.index.runtime import resolve_threads
from retrieval_bench.index.trained_model import shipped_onnx
from retrieval_bench.loads import timed_load
from retrieval_bench.store.corrupt import file_id, recover_cache

BACKENDS = ("torch", "onnx", "onnx-int8")
EXPORT_FILES = ("model.onnx", "model-int8.onnx")
"""What an export folder holds; one missing means the folder is exported again."""
WHAT = "ONNX export"
"""How the warning names a damaged export folder."""
_FORMAT = 2  # bump when the export changes
_EXPORT_LOCK = threading.Lock()


def _model_digest(model_path: Path) -> str:
    """What the export depends on: the weights and configuration files' names, sizes
    and first bytes' hash (a packaged model is never edited in place)."""
    digest = hashlib.sha256(f"v{_FORMAT}".encode())
    for name in ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json"):
        path = model_path / name
        if path.is_file():
            with open(path, "rb") as f:
                head = f.read(1 << 20)
            digest.update(f"{name}:{path.stat().st_size}:".encode() + head)
    return digest.hexdigest()[:12]


def export_dir(model_path: Path, models_dir: Path) -> Path:
    """The folder of ``model_path``'s ONNX export under ``models_dir``."""
    return models_dir / f"{model_path.name}-onnx-{_model_digest(model_path)}"


def export_onnx(model_path: Path, new: Path) -> None:
    """The transformer of ``model_path`` as ``model.onnx`` and ``model-int8.onnx`` in
    the new folder ``new`` (also what ``rbench fit-dense`` ships in a model folder)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    new.mkdir(parents=True)
    bert = AutoModel.from_pretrained(str(model_path)).eval().requires_grad_(False)

    class Encoder(torch.nn.Module):
        """The transformer with positional inputs and its last hidden state out."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            out = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return out.last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = (
        torch.ones((2, 8), dtype=torch.int64),
        torch.ones((2, 8), dtype=torch.int64),
        torch.zeros((2, 8), dtype=torch.int64),
    )
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad(), warnings.catch_warnings():
        # the tracer's notes on constants it keeps (masks, shapes) are about graphs that
        # branch on them; this one does not (checked: onnx_vs_torch.py, the int8 check)
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder().eval(),
            example,
            str(new / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={**{k: axes for k in names}, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )
    # per-channel int8 weights: per-tensor scales lose too much (cosine to PyTorch
    # 0.87 at worst on code chunks, against 0.98 per channel; onnx_vs_torch.py)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process first goes to the root logger
    try:
        quantize_dynamic(
            new / "model.onnx",
            new / "model-int8.onnx",
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
    finally:
        root.setLevel(level)


def exported_model(model_path: Path, models_dir: Path, quantized: bool) -> Path:
    """The ONNX file of ``model_path``: exported on first use, and again when its
    folder lacks one of :data:`EXPORT_FILES` (the folder is moved aside first, with a
    warning: the new export could not be renamed over it)."""
    from retrieval_bench.snapshot.build import build_aside

    dest = export_dir(model_path, models_dir)
    with _EXPORT_LOCK:
        missing = [name for name in EXPORT_FILES if not (dest / name).is_file()]
        if missing and dest.exists():
            recover_cache(dest, file_id(dest), WHAT, FileNotFoundError(f"no {missing[0]}"))
        if missing:
            with timed_load("onnx export"):
                build_aside(dest, lambda new: export_onnx(model_path, new))
    return dest / ("model-int8.onnx" if quantized else "model.onnx")


def is_damaged(exc: BaseException) -> bool:
    """True for ONNX Runtime's refusals of a model file's bytes (not of its inputs)."""
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidGraph, InvalidProtobuf

    return isinstance(exc, InvalidProtobuf | InvalidGraph)


class DamagedModelFile(Exception):
    """ONNX Runtime refused a model file's bytes; the message is its reason, on one line."""


def _session(path: Path, options: Any) -> Any:
    """An ONNX Runtime session of ``path`` on the CPU; :class:`DamagedModelFile` when
    ONNX Runtime cannot parse the file (other errors as they are)."""
    import onnxruntime

    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        if not is_damaged(exc):
            raise
        raise DamagedModelFile(" ".join(str(exc).split())) from exc


def open_session(
    path: Path, model_path: Path, models_dir: Path, quantized: bool, options: Any
) -> Any:
    """An ONNX Runtime session of ``path``, what :func:`exported_model` gave for
    ``model_path``; an export file ONNX Runtime cannot parse (overwritten, truncated)
    has its folder moved aside with one warning and is exported again, once."""
    opened = file_id(path.parent)
    try:
        return _session(path, options)
    except DamagedModelFile as exc:
        recover_cache(path.parent, opened, WHAT, RuntimeError(f"{path.name}: {exc}"))
    return _session(exported_model(model_path, models_dir, quantized), options)


def open_shipped(path: Path, options: Any) -> Any:
    """An ONNX Runtime session of a model folder's own export (``rbench fit-dense``'s
    ``onnx/``): a file ONNX Runtime cannot parse is a one-line :class:`ConfigError`
    (the folder is the user's, not derived data: it is never moved aside)."""
    try:
        return _session(path, options)
    except DamagedModelFile as exc:
        raise ConfigError(
            f"model file {path} cannot be read by ONNX Runtime ({exc}); "
            "restore the model folder or train it again"
        ) from exc


def _opened_key(path: Path, model_path: Path, threads: int | None) -> tuple[object, ...] | None:
    """What an open session depends on: the model file as it is on disk now (path,
    size, modification time: a file rewritten or damaged since is opened anew), the
    tokenizer's folder and the thread count; None when the file cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, str(model_path.resolve()), threads)


class _OpenedSessions:
    """The sessions this process opened, newest last, at most :attr:`keep`: a run
    builds a ``dense`` stage per snapshot, and opening the model again for each cost
    0.2-0.3 s of a 2 s snapshot (two models: a quarter of it)."""

    keep = 4

    def __init__(self) -> None:
        self._items: dict[tuple[object, ...], tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> tuple[Any, Any] | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: tuple[object, ...], opened: tuple[Any, Any]) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = opened
            while len(self._items) > self.keep:
                del self._items[next(iter(self._items))]


_OPENED = _OpenedSessions()


class OnnxEmbedder:
    """A sentence-transformers mean-pooling model run by ONNX Runtime (module doc)."""

    def __init__(
        self,
        model_path: str | Path,
        models_dir: str | Path,
        *,
        backend: str = "onnx",
        name: str,
        threads: int | None = None,
    ) -> None:
        if backend not in BACKENDS[1:]:
            raise ConfigError(f"onnx backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        self.model_path = Path(model_path)
        self.models_dir = Path(models_dir)
        self.backend = backend
        self.name = f"{name}@{backend}"
        self.threads = resolve_threads(threads)
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                quantized = self.backend == "onnx-int8"
                shipped = shipped_onnx(self.model_path, quantized)
                path = shipped or exported_model(self.model_path, self.models_dir, quantized)
                key = _opened_key(path, self.model_path, self.threads)
                opened = _OPENED.get(key) if key is not None else None
                if opened is None:
                    opened = self._open(path, shipped is not None, quantized)
                    if (key := _opened_key(path, self.model_path, self.threads)) is not None:
                        _OPENED.put(key, opened)
                self._session, self._tokenizer = opened
            return self._session, self._tokenizer

    def _open(self, path: Path, shipped: bool, quantized: bool) -> tuple[Any, Any]:
        import onnxruntime
        from tokenizers import Tokenizer

        with timed_load("embedding model"):
            options = onnxruntime.SessionOptions()
            if self.threads is not None:
                options.intra_op_num_threads = self.threads
            if shipped:  # the model folder's own: never moved aside
                session = open_shipped(path, options)
            else:
                session = open_session(path, self.model_path, self.models_dir, quantized, options)
            tok = Tokenizer.from_file(str(self.model_path / "tokenizer.json"))
            config = json.loads((self.model_path / "sentence_bert_config.json").read_text())
            tok.enable_truncation(max_length=int(config.get("max_seq_length", 256)))
            tok.no_padding()
        return session, tok

    @property
    def dim(self) -> int:
        session, _ = self._load()
        return int(session.get_outputs()[0].shape[-1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One text per run: no padding to compute, and a text's vector never depends
        on the texts batched with it (int8 quantizes activations per run); on the
        CPU this is also the fastest (onnx_vs_torch.py)."""
        session, tok = self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(tok.encode_batch(list(texts))):
            ids = np.array([encoding.ids], dtype=np.int64)
            feed = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
            (hidden,) = session.run(["last_hidden_state"], feed)
            mean = hidden[0].mean(axis=0)
            out[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        return out

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.name!r}, threads={self.threads})"

"""The folder ``rbench fit-dense`` writes (docs/stages.md#fit-dense).

A sentence-transformers folder (the trained weights, tokenizer and configuration)
with ``onnx/model.onnx`` and ``onnx/model-int8.onnx`` exported by the ``dense``
stage's own backend (:mod:`~retrieval_bench.index.onnx_backend`), and the manifest
:data:`~retrieval_bench.index.trained_model.MANIFEST`. With ``onnx_only`` the
folder keeps the int8 export alone beside the tokenizer and configuration (about
a quarter of the weights' size: what ``benchmarks/models/`` ships); it then runs
with ``backend: onnx-int8`` only. The folder is built aside and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.index.trained_model import FORMAT, MANIFEST, ONNX_DIR
from retrieval_bench.snapshot.build import build_aside


def weights_fingerprint(folder: Path) -> str:
    """sha256 over the folder's model files (the ONNX exports and any weights), by name:
    what names the model in the embedding cache, so two trainings never share vectors."""
    digest = hashlib.sha256()
    names = ("model.safetensors", f"{ONNX_DIR}/model.onnx", f"{ONNX_DIR}/model-int8.onnx")
    for name in names:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def int8_agreement(folder: Path, texts: Sequence[str]) -> dict[str, float]:
    """Cosine of the int8 export's vectors to the float export's over ``texts`` (the
    check that quantizing held the model: minimum and mean)."""
    from retrieval_bench.index.onnx_backend import OnnxEmbedder

    exact = OnnxEmbedder(folder, folder / ".unused", backend="onnx", name="check")
    small = OnnxEmbedder(folder, folder / ".unused", backend="onnx-int8", name="check")
    a, b = exact.embed(list(texts)), small.embed(list(texts))
    sims = (a * b).sum(axis=1)
    return {
        "texts": len(texts),
        "min_cosine": round(float(np.min(sims)), 4),
        "mean_cosine": round(float(np.mean(sims)), 4),
    }


def model_card(manifest: dict[str, Any]) -> str:
    """The folder's README: what the model is, how it was trained, how to use it (the base
    model's card, which sentence-transformers copies, would describe another model)."""
    t, hp = manifest["training"], manifest["hyper_parameters"]
    repos = ", ".join(r["name"] for r in t["repositories"])
    return (
        f"# A code retriever trained by `rbench fit-dense`\n\n"
        f"Fine-tuned from {manifest['base_model']['name']} (Apache-2.0) on {t['kept']} "
        f"(commit message, modified function) pairs mined from the git histories of {repos}, "
        f"with {t['selection']['hard_negatives']} hard negative(s) per pair from the same "
        f"snapshot, InfoNCE, "
        f"{hp['epochs']} epoch(s), learning rate {hp['learning_rate']}, seed {hp['seed']}.\n\n"
        f"Use it with the `dense` stage of retrieval-bench: `{{name: dense, model_path: "
        f"<this folder>, backend: onnx-int8}}`. Queries are prefixed with "
        f"{manifest['inference']['query_prefix']!r}; a chunk is embedded after its file's "
        f"path. Everything about the training (repositories and commit ranges, data "
        f"fingerprint, command line, versions) is in `{MANIFEST}`.\n"
    )


def write_model_folder(
    dest: Path,
    model: Any,
    manifest: dict[str, Any],
    *,
    check_texts: Sequence[str],
    onnx_only: bool,
    validate: Callable[[Path], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Save ``model`` with its ONNX exports and ``manifest`` (completed with the
    int8 check, ``validate``'s report on the folder being built when given, the files
    kept and their fingerprint) as the new folder ``dest``; the manifest written."""
    from retrieval_bench.index.onnx_backend import export_onnx

    written: dict[str, Any] = {}

    def build(new: Path) -> None:
        model.save(str(new))
        export_onnx(new, new / ONNX_DIR)
        manifest["int8_check"] = int8_agreement(new, check_texts)
        if validate is not None:
            manifest["validation"] = validate(new)
        if onnx_only:
            for name in ("model.safetensors", "pytorch_model.bin", f"{ONNX_DIR}/model.onnx"):
                (new / name).unlink(missing_ok=True)
        manifest["onnx_only"] = onnx_only
        (new / "README.md").write_text(model_card(manifest), encoding="utf-8")
        manifest["fingerprint"] = weights_fingerprint(new)
        manifest["files"] = {
            str(p.relative_to(new)): p.stat().st_size
            for p in sorted(new.rglob("*"))
            if p.is_file() and not p.name.startswith(".")
        }
        manifest["format"] = FORMAT
        (new / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        shutil.rmtree(new / ".unused", ignore_errors=True)
        written.update(manifest)

    build_aside(dest, build)
    return written

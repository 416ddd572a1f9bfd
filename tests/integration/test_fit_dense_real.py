"""``rbench fit-dense`` for real, end to end on a small scripted repository
(docs/stages.md#fit-dense): questions mined from git, the packaged MiniLM as the
base model (ONNX int8) for the filter and the hard negatives, a real training
step, the ONNX export and its int8 check, the held-out validation against the base
model, the manifest, and the ``dense`` stage reading the folder with ``backend:
onnx-int8``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.cli import main
from retrieval_bench.corpus import Corpus
from retrieval_bench.dense_training.model_folder import weights_fingerprint
from retrieval_bench.index.trained_model import FORMAT, MANIFEST
from retrieval_bench.retrieval.dense import DenseRetriever, trained_model_name
from retrieval_bench.types import Chunk
from tests.unit.datasets.gitrepo import GitRepo, needs_git

FUNCTIONS = {
    "parse_header": "def parse_header(line):\n    name, _, value = line.partition(':')\n"
    "    return name.strip().lower(), value.strip()\n",
    "read_body": "def read_body(stream, length):\n    return stream.read(length)\n",
    "encode_query": "def encode_query(params):\n"
    "    return '&'.join(f'{k}={v}' for k, v in params)\n",
    "retry_request": "def retry_request(send, attempts):\n    for _ in range(attempts):\n"
    "        if send():\n            return True\n    return False\n",
}
FIXES = {
    "parse_header": "Fix header parsing when the value holds a colon",
    "read_body": "Read the whole body when the stream returns short reads",
    "encode_query": "Escape query parameters when encoding the query string",
    "retry_request": "Stop retrying a request after the last attempt fails",
}


def _module(version: dict[str, int]) -> str:
    return "\n\n".join(
        FUNCTIONS[name].replace("return", f"# v{version[name]}\n    return", 1)
        for name in FUNCTIONS
    )


@needs_git
def test_fit_dense_trains_exports_and_the_dense_stage_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "httplib")
    version = dict.fromkeys(FUNCTIONS, 0)
    repo.commit("Add the http helpers module", {"httplib/http.py": _module(version)})
    repo.commit("Add string helpers for the client",
                {"httplib/text.py": "def shout(s):\n    return s.upper()\n"})  # fmt: skip
    for _round in range(2):
        for name, message in FIXES.items():
            version[name] += 1
            repo.commit(f"{message} (round {_round})", {"httplib/http.py": _module(version)})
    out = tmp_path / "model"
    code = main([
        "--workspace", str(tmp_path / "ws"), "fit-dense", str(repo.path), "--out", str(out),
        "--last", "20", "--pool-files", "1", "--filter-top", "20", "--batch-size", "2",
        "--query-prefix", "query: ", "--threads", "1", "--onnx-only", "--json",
        "--holdout", "0.25",
    ])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["out"] == str(out.resolve())
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == FORMAT and manifest["created_by"] == "rbench fit-dense"
    training = manifest["training"]
    (repository,) = training["repositories"]
    assert repository["name"] == "httplib" and repository["questions"] == 8
    assert repository["last_commit"] == repo.git("rev-parse", "HEAD")
    # the newest two questions are held out of the filter and the training
    assert repository["held_out"] == 2
    assert training["kept"] + sum(training["dropped"].values()) == training["pairs"] == 6
    validation = manifest["validation"]
    assert summary["validation"] == validation
    assert validation["questions"] == 2 and validation["repositories"] == {"httplib": 2}
    for model in ("base", "trained"):
        assert set(validation[model]) == {"MRR", "Acc@1", "Acc@5"}
        assert 0 < validation[model]["MRR"] <= 1
    assert validation["delta_MRR"] == pytest.approx(
        validation["trained"]["MRR"] - validation["base"]["MRR"], abs=2e-4
    )
    assert 0 <= validation["p_MRR"] <= 1 and "--holdout 0.25" in manifest["command"]
    assert manifest["train"]["steps"] >= 1 and manifest["train"]["sequences"] > 0
    assert manifest["inference"] == {"query_prefix": "query: ", "document_path": True}
    assert manifest["hyper_parameters"]["batch_size"] == 2
    assert 0.9 < manifest["int8_check"]["min_cosine"] <= 1.0
    # onnx-only: the int8 export and what inference reads, no weights
    assert (out / "onnx" / "model-int8.onnx").is_file()
    assert not (out / "model.safetensors").exists() and not (out / "onnx" / "model.onnx").exists()
    assert manifest["fingerprint"] == weights_fingerprint(out)
    card = (out / "README.md").read_text()
    assert card.startswith("# A code retriever trained by `rbench fit-dense`")
    assert "all-MiniLM-L6-v2" in card and "httplib" in card
    assert "--onnx-only" in manifest["command"] and str(repo.path) in manifest["command"]

    dense = DenseRetriever(model_path=str(out), backend="onnx-int8",
                           cache_dir=str(tmp_path / "ws" / "embeddings"))  # fmt: skip
    assert dense.embedder.name == f"{trained_model_name(out)}@onnx-int8"
    chunks = [
        Chunk(id=f"httplib/http.py:{i}-{i}:{i:016x}", path="httplib/http.py", start_line=i,
              end_line=i, language="python", kind="function", symbol=name, text=text,
              n_tokens=10)
        for i, (name, text) in enumerate(FUNCTIONS.items(), 1)
    ]  # fmt: skip
    dense.index(Corpus(root=tmp_path, chunks=chunks))
    run = dense.search({"q": "the header value is cut at a colon"}, 4)
    scores = run.scores["q"]
    assert len(scores) == 4 and all(np.isfinite(list(scores.values())))

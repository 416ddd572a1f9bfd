"""The embedding device: auto picks a GPU only when torch sees one; asking for
CUDA without one is a clear error, never a silent CPU run."""

from __future__ import annotations

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import SentenceTransformerEmbedder
from retrieval_bench.index.runtime import DEVICE_ENV, resolve_device


def test_cpu_and_auto_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == "cpu"
    assert resolve_device(None) == "cpu"
    with pytest.raises(ConfigError, match="sees no CUDA GPU; use device: auto"):
        resolve_device("cuda")


def test_auto_takes_the_gpu_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cuda:0") == "cuda:0"
    with pytest.raises(ConfigError, match="sees 1 CUDA device"):
        resolve_device("cuda:3")


def test_environment_default_and_bad_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert resolve_device(None) == "cpu"
    with pytest.raises(ConfigError, match="choose one of cpu, cuda, cuda:N, auto"):
        resolve_device("tpu")


def test_the_embedder_resolves_its_device_only_when_the_model_loads() -> None:
    emb = SentenceTransformerEmbedder(device="cuda:7")  # no error yet: nothing loaded
    assert emb.resolved_device is None and "cuda:7" in repr(emb)

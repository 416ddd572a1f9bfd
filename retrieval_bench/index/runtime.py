"""Where an embedding model runs: its torch device and CPU thread count.

Both are settings of the machine, not of the benchmark: they change speed,
never which chunks are retrieved (GPU and CPU vectors differ only in the last
float digits). ``docs/architecture.md`` (caches and models) has the context.
"""

from __future__ import annotations

import os

THREADS_ENV = "RBENCH_THREADS"
"""Environment variable with the default CPU thread count of the embedders."""


def resolve_threads(threads: int | None) -> int | None:
    """Thread count: the explicit value, else ``$RBENCH_THREADS``, else None (torch default)."""
    if threads is not None:
        return max(1, int(threads))
    env = os.environ.get(THREADS_ENV, "").strip()
    return max(1, int(env)) if env else None


DEVICE_ENV = "RBENCH_DEVICE"
"""Environment variable with the default embedding device (``cpu``, ``cuda``,
``cuda:N``, ``auto``); unset means ``auto``."""


def resolve_device(device: str | None) -> str:
    """The torch device an embedder runs on.

    ``auto`` (the default, or ``$RBENCH_DEVICE``) takes the first CUDA GPU when
    torch sees one and the CPU otherwise; ``cuda``/``cuda:N`` insist on a GPU and
    fail with a :class:`ConfigError` when there is none, rather than silently
    running on the CPU; ``cpu`` is the CPU. Results differ from the CPU's only
    in the last float digits.
    """
    from retrieval_bench.errors import ConfigError

    wanted = (device or os.environ.get(DEVICE_ENV, "") or "auto").strip().lower()
    if wanted == "cpu":
        return "cpu"
    if wanted != "auto" and not wanted.startswith("cuda"):
        raise ConfigError(f"embedding device {wanted!r}: choose one of cpu, cuda, cuda:N, auto")
    import torch

    if torch.cuda.is_available():
        if wanted.startswith("cuda:"):
            index = wanted.partition(":")[2]
            if not index.isdigit() or int(index) >= torch.cuda.device_count():
                raise ConfigError(
                    f"embedding device {wanted!r}: torch sees "
                    f"{torch.cuda.device_count()} CUDA device(s)"
                )
        return "cuda" if wanted == "auto" else wanted
    if wanted == "auto":
        return "cpu"
    raise ConfigError(
        f"embedding device {wanted!r} asked for, but torch {torch.__version__} sees no CUDA "
        "GPU; use device: auto (GPU when there is one) or cpu"
    )

"""What every perf script records beside its numbers: the machine and the date."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from retrieval_bench.types import Chunk

DEVSETS = Path(__file__).resolve().parents[3] / "shared" / "data" / "devsets"
"""The shared devsets beside the repository (``../shared/data/devsets``)."""
WINDOW = 40


def machine() -> dict[str, Any]:
    """Python, platform, CPU count and 1-minute load (timings are noisy when it is high)."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
    }


def timed_run(cfg: Any, workspace: Path) -> tuple[float, Any, dict[str, Any]]:
    """``(seconds, result, provenance)`` of ``run_benchmark(cfg)`` in ``workspace``, the
    stages warmed first (their modules imported, the chunker's tokenizer loaded)."""
    from retrieval_bench.harness.runner import run_benchmark
    from retrieval_bench.harness.validate import validate_stages
    from retrieval_bench.workspace import Workspace

    validate_stages(cfg)
    t0 = time.perf_counter()
    result = run_benchmark(cfg, Workspace(workspace))
    total = time.perf_counter() - t0
    assert result.out_dir is not None
    provenance: dict[str, Any] = json.loads((result.out_dir / "config.json").read_text())[
        "provenance"
    ]
    return total, result, provenance


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Write ``result`` plus machine and date as indented JSON."""
    result = {**result, "machine": machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def python_windows(root: Path, max_chunks: int, window: int = WINDOW) -> list[Chunk]:
    """``window``-line chunks of the ``.py`` files under ``root``, in sorted path order:
    a large, real corpus of code for the lexical-search benchmarks."""
    files: list[Path] = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames.sort()
        files.extend(Path(dirpath) / n for n in sorted(names) if n.endswith(".py"))
    out: list[Chunk] = []
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        rel = path.relative_to(root).as_posix()
        for start in range(0, len(lines), window):
            end = min(start + window, len(lines))
            text = "\n".join(lines[start:end])
            out.append(
                Chunk(f"{rel}:{start + 1}", rel, start + 1, end, "python", "window", None, text)
            )
            if len(out) >= max_chunks:
                return out
    return out

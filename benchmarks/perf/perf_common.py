"""What every perf script records beside its numbers: the machine and the date."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.types import Chunk

DEVSETS = Path(__file__).resolve().parents[3] / "shared" / "data" / "devsets"
"""The shared devsets beside the repository (``../shared/data/devsets``)."""
DATA_ROOT = Path(os.environ.get("RBENCH_DATA_ROOT") or DEVSETS.parent).resolve()
"""The data root: ``$RBENCH_DATA_ROOT``, else ``../shared/data``."""
REPO_ROOT = Path(__file__).resolve().parents[2]
WINDOW = 40


def git(git_dir: Path | None, *args: str, check: bool = True) -> str:
    """The output of ``git`` in the bare clone ``git_dir`` (None: in this repository)."""
    where = ["--git-dir", str(git_dir)] if git_dir else ["-C", str(REPO_ROOT)]
    proc = subprocess.run(["git", *where, *args], capture_output=True, text=True, check=check)
    return proc.stdout


def commit_question(
    git_dir: Path, base: str, child: str, repo: str
) -> tuple[dict[str, Any] | None, str]:
    """``(question, child's commit date)``: the question ``child`` asks of its parent
    ``base`` (its message; gold: the ``.py`` files it modifies), or None when it
    modifies no ``.py`` file or its message is shorter than 10 characters."""
    diff = git(git_dir, "diff", "--name-only", "--diff-filter=M", base, child)
    gold = [p for p in diff.splitlines() if p.endswith(".py")]
    date, _, message = git(git_dir, "log", "-1", "--format=%cs%n%B", child).partition("\n")
    message = message.strip()
    if not gold or len(message) < 10:
        return None, date
    name = repo.rsplit("/", 1)[-1]
    row = {"id": f"{name}-{child[:10]}", "query": message, "gold_files": gold, "repo": repo,
           "commit": base}  # fmt: skip
    return row, date


def disk_usage(ws: Path, parts: Sequence[str]) -> dict[str, int]:
    """Bytes allocated under each folder ``ws/part``, every inode counted once (where
    first seen: a hardlinked file counts in the first part holding it), and the total."""
    seen: set[tuple[int, int]] = set()
    out: dict[str, int] = {}
    for part in parts:
        total = 0
        for dirpath, dirnames, filenames in os.walk(ws / part):
            for name in [*dirnames, *filenames]:
                st = os.lstat(os.path.join(dirpath, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
        out[part] = total
    out["total"] = sum(out.values())
    return out


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
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.harness.run.validate import validate_stages
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

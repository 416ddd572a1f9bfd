"""The file walker's ignore rules against git's own walk of the same tree.

    python benchmarks/perf/walker_vs_git.py [REPO_DIR] [--repeat 5]

The walker (``retrieval_bench.files.walk_kept``) follows git's ignore rules
(docs/datasets.md#ignore-rules-and-skipped-files) in Python. This script measures,
in one process and on the same working tree, the best of ``--repeat`` passes of:

* ``os_walk``: a bare ``os.walk`` listing every file, no rules (the floor);
* ``git``: ``git ls-files --cached --others --exclude-standard`` (git's C walk
  and matcher, plus its process start);
* ``walker``: ``walk_kept`` with the tree's ``.gitignore`` files, cold (the
  process's memo of ignore verdicts emptied before each pass) and warm (the
  memo kept, as a sweep's later snapshots of the same tree find it);
* ``walker_py_only``: ``walk_kept`` with the SWE-bench whitelist
  ``ignore: ['*', '!*.py', '!*/']`` (every folder re-included, so every
  pattern is tried on every entry).

It also checks that the walker and git keep the same files (the tree's ignore
rules only; the walker's always-ignored names such as ``.git`` aside) and
writes ``benchmarks/perf/results/walker.json`` with the ratios walker/git and
walker/os_walk, the file counts, versions and the machine's load. Nothing is
asserted about speed. REPO_DIR defaults to a checkout of the pytest bundle in
``../shared/data/repos`` (cloned to a temporary folder), else this repository.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perf_common import write_result  # sibling module: the scripts run standalone

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from retrieval_bench import files  # noqa: E402
from retrieval_bench.files import IgnoreRules, walk_kept  # noqa: E402

RESULT = REPO / "benchmarks" / "perf" / "results" / "walker.json"
BUNDLE = REPO.parent / "shared" / "data" / "repos" / "pytest.bundle"
WHITELIST = ("*", "!*.py", "!*/")


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    """Fastest wall time of ``repeat`` calls of ``fn`` and its last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def os_walk(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def git_kept(root: Path) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, check=True, capture_output=True,
    ).stdout  # fmt: skip
    return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}


def walker(root: Path, extra: tuple[str, ...] = (), cold: bool = True) -> set[str]:
    if cold:
        files._VERDICTS.clear()  # the process-wide memo of verdicts (files.py)
    return set(walk_kept(root, IgnoreRules(root, extra)))


def checkout(tmp: Path) -> Path:
    """A working tree of the pytest bundle's head (the default tree to walk)."""
    target = tmp / "pytest"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(target)], check=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.repo or (checkout(Path(tmp)) if BUNDLE.is_file() else REPO)
        t_os, n_all = best_of(args.repeat, lambda: os_walk(root))
        t_git, by_git = best_of(args.repeat, lambda: git_kept(root))
        t_walk, by_walker = best_of(args.repeat, lambda: walker(root))
        t_warm, _ = best_of(args.repeat, lambda: walker(root, cold=False))
        t_py, py_only = best_of(args.repeat, lambda: walker(root, WHITELIST))
    assert isinstance(by_git, set) and isinstance(by_walker, set) and isinstance(py_only, set)
    # the walker always drops .git/ and a few other names git never lists anyway
    differ = sorted(by_git ^ by_walker)
    result = {
        "tree": str(root) if args.repo else ("pytest.bundle head" if BUNDLE.is_file() else "."),
        "repeat": args.repeat,
        "files_on_disk": n_all,
        "kept_by_git": len(by_git),
        "kept_by_walker": len(by_walker),
        "kept_with_py_whitelist": len(py_only),
        "py_files_kept_by_git": sum(p.endswith(".py") for p in by_git),
        "disagreements": differ[:20],
        "seconds": {
            "os_walk": t_os,
            "git": t_git,
            "walker": t_walk,
            "walker_warm": t_warm,
            "walker_py_only": t_py,
        },  # fmt: skip
        "ratio_walker_vs_git": t_walk / t_git,
        "ratio_walker_vs_os_walk": t_walk / t_os,
        "ratio_walker_warm_vs_git": t_warm / t_git,
        "ratio_walker_py_only_vs_git": t_py / t_git,
    }
    write_result(RESULT, result)
    print(
        f"{result['tree']}: {n_all} files on disk, git keeps {len(by_git)}, walker "
        f"{len(by_walker)} ({len(differ)} differ); .py whitelist keeps {len(py_only)} "
        f"(git's .py files: {result['py_files_kept_by_git']})\n"
        f"best of {args.repeat}: os.walk {t_os * 1e3:.1f} ms, git {t_git * 1e3:.1f} ms, "
        f"walker {t_walk * 1e3:.1f} ms ({t_walk / t_git:.2f}x git, {t_walk / t_os:.2f}x "
        f"os.walk; warm memo {t_warm * 1e3:.1f} ms), walker with the .py whitelist "
        f"{t_py * 1e3:.1f} ms ({t_py / t_git:.2f}x git)"
    )


if __name__ == "__main__":
    main()

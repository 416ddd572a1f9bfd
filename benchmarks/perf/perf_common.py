"""What every perf script records beside its numbers: the machine and the date."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tarfile
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


def far_rows(
    bundle: Path, git_dir: Path, repo: str, n: int, step: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(questions, source)``: a bare clone of ``bundle`` made at ``git_dir`` (timed
    for the record), then, walking back from the newest first-parent commit, every
    ``step``-th commit ``base`` that :func:`commit_question` asks a question at, until
    ``n``: snapshots far apart, so that each one brings many files the others lack."""
    t0 = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(git_dir)], check=True)
    source = {"bundle": str(bundle), "repo": repo, "step": step,
              "bare_clone_s": time.perf_counter() - t0}  # fmt: skip
    commits = git(git_dir, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    rows: list[dict[str, Any]] = []
    dates: list[str] = []
    for i in range(len(commits) - 1 - step, -1, -step):
        row, date = commit_question(git_dir, commits[i], commits[i + 1], repo)
        if row is not None:
            rows.append(row)
            dates.append(date)
        if len(rows) == n:
            break
    return rows, {**source, "commit_dates": [min(dates), max(dates)] if dates else []}


def read_py_files(row: dict[str, Any], git_dir: str) -> tuple[list[str], list[str]]:
    """Paths and texts of the ``.py`` files of ``row``'s snapshot: the members of its
    ``snapshot`` tarball (below the top folder), else its ``commit`` in the bare clone
    ``git_dir``, read with one ``git cat-file --batch``."""
    paths, texts = [], []
    if "snapshot" in row:
        with tarfile.open(row["snapshot"]) as tar:
            for m in tar:
                if m.isfile() and m.name.endswith(".py") and (f := tar.extractfile(m)):
                    paths.append(m.name.split("/", 1)[1])  # below the top folder <id>/
                    texts.append(f.read().decode("utf-8", errors="replace"))
        return paths, texts
    entries = [e.split("\t", 1) for e in git(Path(git_dir), "ls-tree", "-r", "-z",
               row["commit"]).split("\0") if e]  # fmt: skip
    blobs = [(p, m.split()[2]) for m, p in entries if p.endswith(".py") and " blob " in m]
    paths, shas = [p for p, _ in blobs], [sha for _, sha in blobs]
    cmd = ["git", "--git-dir", git_dir, "cat-file", "--batch"]
    out = subprocess.run(cmd, input="".join(s + "\n" for s in shas).encode(),
                         capture_output=True, check=True).stdout  # fmt: skip
    pos = 0
    for _ in shas:  # records: "<sha> blob <size>\n<bytes>\n"
        eol = out.index(b"\n", pos)
        size = int(out[pos:eol].split()[2])
        texts.append(out[eol + 1 : eol + 1 + size].decode("utf-8", errors="replace"))
        pos = eol + 2 + size
    return paths, texts


def whole_file_bm25(
    questions: Path, git_dir: str, ks: Sequence[int] = (1, 5, 10)
) -> dict[str, Any]:
    """A minimal whole-file BM25 baseline, timed from after its imports: per snapshot of
    the question rows in ``questions`` (:func:`read_py_files`), ``text + " " + path`` of
    each ``.py`` file indexed with bm25s, each question asked at k = 10. Returns seconds,
    per-snapshot phases, Acc@k (all gold files in the top k) and MRR, and the ranks."""
    import bm25s
    import numpy  # noqa: F401  (imported before the clock, as bm25s needs it)

    t0 = time.perf_counter()
    by_snapshot: dict[str, list[dict[str, Any]]] = {}
    for row in map(json.loads, questions.read_text().splitlines()):
        by_snapshot.setdefault(row.get("snapshot") or row["commit"], []).append(row)
    snapshots, ranks = [], {}
    for key, group in by_snapshot.items():
        t_read = time.perf_counter()
        paths, texts = read_py_files(group[0], git_dir)
        t_index = time.perf_counter()
        docs = [f"{text} {path}" for path, text in zip(paths, texts, strict=True)]
        model = bm25s.BM25()
        model.index(bm25s.tokenize(docs, stopwords="en", show_progress=False),
                    show_progress=False)  # fmt: skip
        t_query = time.perf_counter()
        for row in group:
            query = bm25s.tokenize([row["query"]], stopwords="en", return_ids=False,
                                   show_progress=False)  # fmt: skip
            found, _ = model.retrieve(query, k=min(10, len(docs)), show_progress=False)
            top = [paths[int(i)] for i in found[0]]
            gold = set(row["gold_files"])
            hits = [r for r, p in enumerate(top, 1) if p in gold]
            ranks[row["id"]] = {"first": hits[0] if hits else None,
                                "all": hits[-1] if len(hits) == len(gold) else None}  # fmt: skip
        end = time.perf_counter()
        snapshots.append({"snapshot": key, "files": len(paths), "read_s": t_index - t_read,
                          "index_s": t_query - t_index, "query_s": end - t_query})  # fmt: skip
    total = time.perf_counter() - t0
    n = max(len(ranks), 1)
    metrics = {f"Acc@{k}": sum(r["all"] is not None and r["all"] <= k
                               for r in ranks.values()) / n for k in ks}  # fmt: skip
    metrics["MRR"] = sum(1 / r["first"] for r in ranks.values() if r["first"]) / n
    return {"total_s": total, "questions": len(ranks), "snapshots": snapshots,
            "metrics": metrics, "ranks": ranks}  # fmt: skip


def cache_disk(ws: Path) -> dict[str, int]:
    """Bytes per folder of ``ws/cache`` (and of ``cache/snapshots``), each inode counted
    once (:func:`disk_usage`), and the total."""
    cache = ws / "cache"
    parts = sorted(p for p in cache.glob("*") if p.is_dir() and p.name != "snapshots")
    parts += sorted(p for p in (cache / "snapshots").glob("*") if p.is_dir())
    return disk_usage(ws, [p.relative_to(ws).as_posix() for p in parts])


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

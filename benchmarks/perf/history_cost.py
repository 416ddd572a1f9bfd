"""What the ``history`` stage costs (docs/stages.md#history): the one-time read of a
repository's log, and each snapshot's share.

    python benchmarks/perf/history_cost.py [--bundle networkx.bundle] [--questions 20]

A bare mirror of the bundle (default ``$RBENCH_DATA_ROOT/repos/networkx.bundle``) is
made in a temporary cache (not timed: the snapshot's own cost). Questions: every
non-merge first-parent commit among the newest 2,000 that changes a ``.py`` file,
``--questions`` of them evenly spaced, each asked at its parent (``commit_is:
parent``): its message is the query, its parent a snapshot of its own. Timed:

* ``log_read_s``: the first snapshot's log, read from git (``rev-list``, ``log
  --name-status -M``, parsing) and written to the history cache;
* ``cache_load_s``: the same log loaded from the cache by a new process's view;
* ``message_index_s``: the messages tokenised and their postings built (once);
* ``hunks_read_s``: the changed definition names of the first-parent line of HEAD,
  read from git (two ``git log -p -U0`` passes, one per hunk-header pattern) and cached, for
  ``similar-functions`` (docs/stages.md#similar-functions); ``hunks_cache_load_s``:
  loaded from the cache by a new process's view;
* per question, the snapshot's history (first-parent walk, renames) and each signal's
  ``index`` + ``search`` in milliseconds (the five stages of one config share the
  history, as in a run). ``similar-functions`` resolves names in the snapshot's
  files, so each snapshot's tree is written out (``git archive``, not timed).

``similar_functions_over_similar_fixes`` is the ratio of the two signals' median
per-question times (the file-level signal the baseline, in the same process).
Writes ``benchmarks/perf/results/history_cost.json``. Nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_common import DATA_ROOT, REPO_ROOT, git, write_result

from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.gitmine import clean_message
from retrieval_bench.retrieval.history import HistoryRetriever, message_index
from retrieval_bench.retrieval.history_hunks import forget_hunk_logs, hunk_log
from retrieval_bench.retrieval.history_log import forget_logs, repo_log
from retrieval_bench.retrieval.history_view import SnapshotHistory
from retrieval_bench.snapshot import Snapshot
from retrieval_bench.snapshot.mirrors import open_mirror
from retrieval_bench.types import Chunk

RESULT = REPO_ROOT / "benchmarks" / "perf" / "results" / "history_cost.json"
SIGNALS = ("similar-fixes", "churn", "recency", "co-change", "similar-functions")


def questions(mirror: Path, n: int) -> list[tuple[str, str]]:
    """``(parent sha, query)`` of ``n`` commits evenly spaced (module doc)."""
    shas = git(mirror, "rev-list", "--first-parent", "--no-merges", "-n", "2000", "HEAD").split()
    picked = []
    for sha in shas:
        changed = git(mirror, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split()
        if any(p.endswith(".py") for p in changed):
            picked.append(sha)
    step = max(1, len(picked) // n)
    out = []
    for sha in picked[::step][:n]:
        parent = git(mirror, "rev-parse", f"{sha}^").strip()
        subject, _, body = git(mirror, "log", "-1", "--format=%s%n%b", sha).partition("\n")
        out.append((parent, clean_message(subject, body)[1]))
    return out


def corpus_of(mirror: Path, sha: str, cache: Path) -> Corpus:
    """A corpus of the snapshot's paths over its tree written to ``cache/trees/<sha>``
    (the stages read the files' text only to resolve similar-functions' names)."""
    paths = git(mirror, "ls-tree", "-r", "--name-only", sha).splitlines()
    root = cache / "trees" / sha
    root.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", sha],
                             capture_output=True, check=True).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    corpus = Corpus(root, [Chunk(f"{p}:1-1:0", p, 1, 1, "", "file", None, "") for p in paths])
    corpus.cache_dir = cache
    return corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=DATA_ROOT / "repos" / "networkx.bundle")
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        mirror = open_mirror(str(args.bundle), cache / "snapshots", label="perf", todo="")
        asked = questions(mirror, args.questions)
        history_cache = cache / "history"

        t0 = time.perf_counter()
        log = repo_log(mirror, history_cache)
        SnapshotHistory.of(log, asked[0][0])
        log_read = time.perf_counter() - t0
        read_first = log.read_from_git
        t0 = time.perf_counter()
        message_index(log).refresh()
        index_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        hunks = hunk_log(log, history_cache)
        hunks.names_of(log.chain(asked[0][0]))
        hunks_read = time.perf_counter() - t0
        hunk_commits = hunks.read_from_git

        forget_logs()
        forget_hunk_logs()
        t0 = time.perf_counter()
        loaded = repo_log(mirror, history_cache)
        cache_load = time.perf_counter() - t0
        n_loaded = len(loaded)
        message_index(loaded).refresh()
        t0 = time.perf_counter()
        hunk_log(loaded, history_cache)
        hunks_load = time.perf_counter() - t0

        per: dict[str, list[float]] = {"history": [], **{s: [] for s in SIGNALS}}
        commits = []
        for sha, query in asked:
            corpus = corpus_of(mirror, sha, cache)
            t0 = time.perf_counter()
            history = corpus.derived(("history", loaded.key, sha),
                                     lambda sha=sha: SnapshotHistory.of(loaded, sha))  # fmt: skip
            per["history"].append(1000 * (time.perf_counter() - t0))
            commits.append(len(history))
            snap = Snapshot(Path("."), sha, "repo", sha, git_dir=mirror)
            for signal in SIGNALS:
                t0 = time.perf_counter()
                stage = HistoryRetriever(snapshot=snap, signal=signal)
                stage.index(corpus)
                stage.search({"q": query}, 50)
                per[signal].append(1000 * (time.perf_counter() - t0))
    result: dict[str, Any] = {
        "bundle": str(args.bundle),
        "first_parent_commits_read": read_first,
        "log_read_s": round(log_read, 3),
        "cache_load_s": round(cache_load, 3),
        "commits_loaded": n_loaded,
        "commits_read_later": loaded.read_from_git,
        "message_index_s": round(index_s, 3),
        "hunks_read_s": round(hunks_read, 3),
        "hunk_commits_read": hunk_commits,
        "hunks_cache_load_s": round(hunks_load, 3),
        "questions": len(asked),
        "history_commits": [min(commits), max(commits)],
        "similar_functions_over_similar_fixes": round(
            statistics.median(per["similar-functions"]) / statistics.median(per["similar-fixes"]), 2
        ),
        "ms_per_question": {
            k: {"median": round(statistics.median(v), 2), "max": round(max(v), 2)}
            for k, v in per.items()
        },
    }
    write_result(RESULT, result)
    print(RESULT.read_text())


if __name__ == "__main__":
    main()

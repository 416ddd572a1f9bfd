"""The first-parent commit log of a git repository, read once and cached
(docs/stages.md#history).

:class:`RepoLog` holds the commits of one repository that some snapshot's
first-parent history reached: for each, its sha, parents, author time,
subject and body, and the files it changed against its first parent
(``git log --first-parent --diff-merges=first-parent --name-status -M``: a merge
counts as everything it brought into the first-parent line; renames detected at
git's default 50 % similarity). :meth:`RepoLog.chain` gives the first-parent
history of a commit, newest first (the commit itself first), walking the parent
pointers in memory; a commit the log lacks is read from git then, together with
the part of its history not read yet (``git rev-list --first-parent`` to find
where it joins what is known, one ``git log`` for the rest). So a repository's
log is read once, and a later snapshot reads only the commits after the ones
before it.

A commit's record depends on the commit alone (its sha names its parents and
trees), so records never go stale: they are kept in the workspace's history cache
(:class:`HistoryCache`, ``cache/history/history.sqlite``), one row per (repository,
commit), and a later process loads a repository's rows in one query instead of
asking git. The cache is derived data: a damaged file is moved aside and rebuilt, a
damaged row is dropped and its commit read from git again
(:mod:`~retrieval_bench.store.sqlite_cache`).
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from retrieval_bench.datasets.gitmine import name_status_changes
from retrieval_bench.errors import SnapshotError
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

_SEP, _REC = "\x1f", "\x1e"
_FORMAT = f"--format={_REC}%H{_SEP}%P{_SEP}%at{_SEP}%s{_SEP}%b{_SEP}"
_SHA = re.compile(r"[0-9a-f]{40}")
CACHE_FILE = "history.sqlite"
"""The history cache's file name, in the workspace's ``cache/history/`` folder."""
_MEMO_LIMIT = 8
"""Repositories whose log a process keeps in memory at once."""


class CommitRecord(NamedTuple):
    """One commit of the first-parent line, with its changes against its first parent."""

    sha: str
    parents: tuple[str, ...]
    """Its parents, the first parent first (none for a root commit; two or more for a
    merge)."""
    time: int
    """Author time, Unix seconds."""
    subject: str
    body: str
    changes: tuple[tuple[str, str, str], ...]
    """``(status letter, old path, new path)``: ``M``/``A``/``D``/``T`` with old = new,
    ``R`` a rename from old to new."""

    @property
    def parent(self) -> str | None:
        """The first parent (None for a root commit)."""
        return self.parents[0] if self.parents else None


# ----------------------------------------------------------------------------- git


def git_output(git_dir: Path, args: list[str], what: str, stdin: str | None = None) -> str:
    """What ``git --git-dir GIT_DIR ARGS`` prints (``stdin`` fed to it); a
    :class:`SnapshotError` naming ``what`` could not be read when git fails."""
    cmd = ["git", "--git-dir", str(git_dir), *args]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise SnapshotError(f"history: cannot run git ({exc}): install git") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        why = lines[0] if lines else f"git exited with {proc.returncode}"
        raise SnapshotError(f"history: cannot read {what} from {git_dir}: {why}")
    return proc.stdout


def head_sha(git_dir: Path) -> str | None:
    """The commit the repository's HEAD names; None when it names none (an empty
    repository) or git cannot tell."""
    cmd = ["git", "--git-dir", str(git_dir), "rev-parse", "--verify", "-q", "HEAD^{commit}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    return out if _SHA.fullmatch(out) else None


def first_parent_shas(git_dir: Path, sha: str) -> list[str]:
    """``sha`` and its first-parent ancestors, newest first (``git rev-list --first-parent``)."""
    _check_sha(sha)
    out = git_output(
        git_dir, ["rev-list", "--first-parent", sha, "--"], f"the history of {sha[:12]}"
    )
    return out.split()


def read_commits(git_dir: Path, sha: str, count: int | None = None) -> list[CommitRecord]:
    """The first-parent log of ``sha`` (the newest ``count`` commits), newest first."""
    _check_sha(sha)
    args = ["log", "--first-parent", "--diff-merges=first-parent", "-z", _FORMAT]
    args += ["--name-status", "-M"]
    if count is not None:
        args.append(f"--max-count={int(count)}")
    out = git_output(git_dir, [*args, sha, "--"], f"the log of {sha[:12]}")
    return [parse_record(rec) for rec in out.split(_REC) if rec.strip("\0\n")]


def _check_sha(sha: str) -> None:
    if not _SHA.fullmatch(sha):
        raise SnapshotError(f"history: {sha!r} is not a full commit sha")


def parse_record(record: str) -> CommitRecord:
    """One record of :func:`read_commits`' ``git log -z`` output."""
    sha, parents, when, subject, body, rest = record.split(_SEP, 5)
    changes = [(status[0], old, new) for status, old, new in name_status_changes(rest)]
    when_s = when.strip()
    return CommitRecord(
        sha.strip(), tuple(parents.split()), int(when_s) if when_s.isdigit() else 0,
        subject.strip(), body.strip(), tuple(changes),
    )  # fmt: skip


# ----------------------------------------------------------------------------- cache


class HistoryCache(SQLiteCache):
    """Commit records by (repository, sha) (module doc)."""

    what = "history cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS commits_v1 (repo TEXT NOT NULL, sha TEXT NOT NULL, "
        "parents TEXT NOT NULL, time INTEGER NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, "
        "changes TEXT NOT NULL, PRIMARY KEY (repo, sha)) WITHOUT ROWID"
    )
    insert = "INSERT OR REPLACE INTO commits_v1 VALUES (?, ?, ?, ?, ?, ?, ?)"
    _delete = "DELETE FROM commits_v1 WHERE repo = ? AND sha = ?"

    def load(self, repo: str) -> list[CommitRecord]:
        """Every commit stored for ``repo``; a row that is not what this version writes is
        deleted (:meth:`~retrieval_bench.store.sqlite_cache.SQLiteCache.drop_damaged`)
        and left out, so its commit is read from git again."""
        select = "SELECT sha, parents, time, subject, body, changes FROM commits_v1 WHERE repo = ?"
        rows = self._guarded(lambda conn: conn.execute(select, (repo,)).fetchall())
        out = []
        for row in rows:
            try:
                out.append(_decode(row))
            except DamagedRowError as exc:
                self.drop_damaged(self._delete, (repo, row[0]), exc)
        return out

    def store(self, repo: str, records: Iterable[CommitRecord]) -> None:
        """Write ``records`` of ``repo`` in one transaction."""
        for r in records:
            changes = json.dumps([list(c) for c in r.changes], separators=(",", ":"))
            self.queue((repo, r.sha, " ".join(r.parents), r.time, r.subject, r.body, changes))
        self.flush()


def _decode(row: tuple[object, ...]) -> CommitRecord:
    """A stored row as a record; :class:`DamagedRowError` when it is not one."""
    sha, parents, when, subject, body, changes = row
    try:
        decoded = json.loads(str(changes))
        ok = isinstance(sha, str) and _SHA.fullmatch(sha) is not None
        shas = str(parents).split()
        ok = ok and isinstance(parents, str) and all(_SHA.fullmatch(p) for p in shas)
        ok = ok and isinstance(when, int) and isinstance(subject, str) and isinstance(body, str)
        triples = tuple((str(s), str(o), str(n)) for s, o, n in decoded)
    except (ValueError, TypeError) as exc:
        raise DamagedRowError(f"changes: {exc}") from None
    if not ok or not isinstance(decoded, list) or any(not t[0] for t in triples):
        raise DamagedRowError("a field of the wrong type")
    assert isinstance(sha, str) and isinstance(when, int)
    return CommitRecord(sha, tuple(shas), when, str(subject), str(body), triples)


# ----------------------------------------------------------------------------- the log


class RepoLog:
    """The commits of one repository read so far (module doc). Rows are numbered in
    the order the commits were read (:attr:`records`); :meth:`chain` gives rows."""

    def __init__(self, git_dir: Path, cache: HistoryCache | None = None) -> None:
        self.git_dir = Path(git_dir)
        self.key = str(self.git_dir.resolve())
        """The repository's identity in the cache: its resolved path (a mirror's folder
        is named by its source's location: docs/architecture.md#caches)."""
        self.cache = cache
        self.records: list[CommitRecord] = []
        self.rows: dict[str, int] = {}
        self.read_from_git = 0
        """Commits this object read from git (the others came from the cache)."""
        self._chains: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        self._head_read = False
        if cache is not None:
            self._add(cache.load(self.key))

    def _add(self, records: Iterable[CommitRecord]) -> None:
        for rec in records:
            if rec.sha not in self.rows:
                self.rows[rec.sha] = len(self.records)
                self.records.append(rec)

    def chain(self, sha: str) -> list[int]:
        """Rows of ``sha`` and its first-parent ancestors, newest first (``sha`` first):
        the commits a snapshot at ``sha`` may learn from, and nothing after it."""
        with self._lock:
            found = self._chains.get(sha)
            if found is None:
                if len(self._chains) >= 64:
                    self._chains.clear()
                found = self._chains[sha] = self._walk(sha)
            return found

    def _walk(self, sha: str) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        at: str | None = sha
        while at is not None:
            row = self.rows.get(at)
            if row is None:
                self._read(at)
                row = self.rows.get(at)
                if row is None:  # git gave another history than it listed
                    raise SnapshotError(f"history: git did not give commit {at[:12]}")
            if row in seen:  # a parent loop: only a damaged record can make one
                raise SnapshotError(f"history: the log of {self.git_dir} loops at {at[:12]}")
            seen.add(row)
            out.append(row)
            at = self.records[row].parent
        return out

    def _read(self, sha: str) -> None:
        """Read ``sha`` and its first-parent ancestors the log lacks. The first time git is
        read, the first-parent line of the repository's HEAD is read before: the snapshots
        of a run are nearly all on it, and a log that grew one snapshot at a time would be
        walked by ``rev-list`` and re-indexed once per snapshot (188 ms a question on
        pytest's history against 36 ms, docs/stages.md#history). Reading later commits
        leaks nothing: a snapshot only ever sees its own chain (:meth:`chain`)."""
        if not self._head_read:
            self._head_read = True
            head = head_sha(self.git_dir)
            if head is not None and head not in self.rows:
                self._read_line(head)
            if sha in self.rows:
                return
        self._read_line(sha)

    def _read_line(self, sha: str) -> None:
        """Read ``sha`` and its first-parent ancestors the log lacks (down to the first
        one it has), and store them in the cache."""
        missing = []
        for s in first_parent_shas(self.git_dir, sha):
            if s in self.rows:
                break
            missing.append(s)
        records = read_commits(self.git_dir, sha, len(missing)) if missing else []
        self._add(records)
        self.read_from_git += len(records)
        if self.cache is not None and records:
            self.cache.store(self.key, records)

    def __len__(self) -> int:
        return len(self.records)


_LOGS: dict[tuple[str, str | None], RepoLog] = {}
_LOGS_LOCK = threading.Lock()


def repo_log(git_dir: Path, cache_dir: Path | None = None) -> RepoLog:
    """The process's :class:`RepoLog` of ``git_dir``, loaded from the history cache in
    ``cache_dir`` (the workspace's ``cache/history``; None: memory only) on first use."""
    cache_key = None if cache_dir is None else str(Path(cache_dir).resolve())
    key = (str(Path(git_dir).resolve()), cache_key)
    with _LOGS_LOCK:
        found = _LOGS.get(key)
        if found is None:
            if len(_LOGS) >= _MEMO_LIMIT:
                _LOGS.pop(next(iter(_LOGS)))
            cache = None if cache_dir is None else HistoryCache.shared(Path(cache_dir) / CACHE_FILE)
            found = _LOGS[key] = RepoLog(Path(git_dir), cache)
        return found


def forget_logs() -> None:
    """Drop the process's logs (tests: a new process's view of the cache)."""
    with _LOGS_LOCK:
        _LOGS.clear()

"""Per commit, the Python definitions it changed, named by git's hunk headers; read once
per repository and cached (docs/stages.md#similar-functions).

``git log -p -U0`` over the ``*.py`` files with a diff driver of this project's
(``*.py diff=rbench`` through a temporary ``core.attributesFile``, and
``diff.rbench.xfuncname``) names, in each hunk's header, the nearest ``def`` or
``class`` line before the hunk in the file as it was before the commit: the definition
the change falls in. Two passes of the same log, whose hunks match one for one: the
first with :data:`DEF_FUNCNAME` (that line with its indentation), the second with
:data:`CLASS_FUNCNAME` (the nearest top-level ``class`` line), so an indented
definition is qualified by its top-level class. Without parsing a single blob, each
commit becomes ``((path after the commit, (name, ...)), ...)``, a name bare (``parse``)
or qualified (``Parser.parse``):

* a hunk's names are its header's, unless the hunk's first non-blank changed line is
  itself a definition or a decorator (then the header names the definition *before*
  it, which the change does not touch), and those of the ``def``/``class`` lines it
  changes (an added, removed or re-signed definition; a top-level ``class`` or
  ``def`` line among them sets or ends the class that qualifies the rest);
* a deleted file names nothing (it is in no later snapshot); a merge counts as what it
  brought into the first-parent line (``--diff-merges=first-parent``), as the file log
  does (:mod:`~retrieval_bench.retrieval.history_log`).

The stage resolves the names in the snapshot's file
(:func:`~retrieval_bench.retrieval.history_functions.entities_named`). What this
misses, by construction: a change at module level below a function is credited to that
function, and a class nested in a class qualifies nothing.

The first read takes the first-parent line of the repository's HEAD (a run's snapshots
are nearly all on it); a commit off that line is read with the others it needs in one
``git log --no-walk --stdin``. A commit's changes depend on the commit alone, so they are
kept in the workspace's history cache (``cache/history/hunks.sqlite``, one row per
(repository, commit)); a damaged row is dropped and read again.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from retrieval_bench.retrieval.history_log import (
    RepoLog,
    first_parent_shas,
    git_output,
    head_sha,
)
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

FileNames = tuple[str, tuple[str, ...]]
"""``(path after the commit, the definition names changed in it)``."""
CommitNames = tuple[FileNames, ...]

CACHE_FILE = "hunks.sqlite"
_REC = "\x1e"
_FORMAT = f"--format={_REC}%H"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_DEF = re.compile(r"^([ \t]*)(?:(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+))")
_DECORATOR = re.compile(r"^[ \t]*@")
_ATTRIBUTES = "*.py diff=rbench\n"
_DRIVER = "diff.rbench.xfuncname"
DEF_FUNCNAME = "^([ \t]*(class|(async[ \t]+)?def)[ \t].*)$"
"""The first pass's hunk header: the nearest ``def``/``class`` line, its indentation
kept (git's own ``python`` driver drops it), so a header says how deep it is."""
CLASS_FUNCNAME = "^(class[ \t].*)$"
"""The second pass's hunk header: the nearest top-level ``class`` line."""
_MEMO_LIMIT = 8


def definition_name(line: str) -> str | None:
    """The name a ``def``/``class`` line defines (None: not such a line)."""
    m = _DEF.match(line)
    return None if m is None else (m.group(2) or m.group(3))


def _definition(line: str) -> tuple[int, str, bool] | None:
    """``(indentation, name, is a class)`` of a ``def``/``class`` line."""
    m = _DEF.match(line)
    if m is None:
        return None
    return len(m.group(1).expandtabs()), m.group(2) or m.group(3), m.group(3) is not None


def _new_path(line: str) -> str | None:
    """The path of a ``+++ b/<path>`` line (None for ``/dev/null``: a deleted file)."""
    rest = line[4:].rstrip("\n")
    if rest.startswith('"') and rest.endswith('"'):  # git quotes unusual names
        rest = rest[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return rest[2:] if rest.startswith("b/") else None


class _Hunk:
    """One hunk's names: its header's, then those of its changed ``def``/``class`` lines,
    a method qualified by its top-level class (``Class.method``) where the headers tell
    it (module doc)."""

    __slots__ = ("header", "first", "names", "owner")

    def __init__(self, header: str, top_class: str | None) -> None:
        found = _definition(header)
        self.owner: str | None = None  # the top-level class the hunk's lines are in
        if found is not None and found[0] > 0:
            self.owner = top_class
        elif found is not None and found[2]:
            self.owner = found[1]
        self.header = None if found is None else self._qualified(found[0], found[1])
        self.first: str | None = None  # the first non-blank changed line
        self.names: list[str] = []

    def _qualified(self, indent: int, name: str) -> str:
        return f"{self.owner}.{name}" if indent > 0 and self.owner else name

    def line(self, content: str) -> None:
        if self.first is None and content.strip():
            self.first = content
        found = _definition(content)
        if found is None:
            return
        indent, name, is_class = found
        if indent == 0:
            self.owner = name if is_class else None
        self.names.append(self._qualified(indent, name))

    def result(self) -> list[str]:
        first = self.first
        opens = first is not None and (_definition(first) or _DECORATOR.match(first))
        if self.header is not None and not opens:
            return [self.header, *self.names]
        return self.names


def _records(text: str) -> list[tuple[str, list[str]]]:
    """``(sha, its patch lines)`` per commit of a ``--format=<RS>%H`` log."""
    out = []
    for record in text.split(_REC):
        if record.strip():
            sha, *lines = record.split("\n")
            out.append((sha.strip(), lines))
    return out


def hunk_headers(text: str) -> dict[str, list[str]]:
    """Per commit of a ``git log -p`` output, its hunk headers in order."""
    out: dict[str, list[str]] = {}
    for sha, lines in _records(text):
        out[sha] = [m.group(1) for m in map(_HUNK.match, lines) if m is not None]
    return out


def parse_patch_log(
    text: str, classes: dict[str, list[str]] | None = None
) -> dict[str, CommitNames]:
    """``git log -p -U0 --format=<RS>%H`` output (:data:`DEF_FUNCNAME` headers) → sha →
    its changed names (module doc); ``classes``: the same log's headers by
    :data:`CLASS_FUNCNAME` (:func:`hunk_headers`), which qualify methods (a commit whose
    hunks they do not match one for one gets bare names). A commit listed with no Python
    hunk maps to ``()``."""
    out: dict[str, CommitNames] = {}
    for sha, lines in _records(text):
        out[sha] = _commit_names(lines, (classes or {}).get(sha))
    return out


def _commit_names(lines: list[str], classes: list[str] | None) -> CommitNames:
    """One commit's patch lines → its changed names per ``.py`` file."""
    n_hunks = sum(1 for line in lines if _HUNK.match(line))
    tops = [definition_name(h) for h in classes] if classes and len(classes) == n_hunks else None
    files: dict[str, dict[str, None]] = {}
    path: str | None = None
    hunk: _Hunk | None = None
    in_header, seen = False, 0
    for line in [*lines, "diff --git "]:  # a last header closes the last hunk
        starts_file = line.startswith("diff --git ")
        if starts_file or line.startswith("@@ "):
            if hunk is not None and path is not None:
                files.setdefault(path, {}).update(dict.fromkeys(hunk.result()))
            hunk = None
        if starts_file:
            path, in_header = None, True
        elif in_header and line.startswith("+++ "):
            path = _new_path(line)
        elif line.startswith("@@ "):
            m = _HUNK.match(line)
            if m is not None:
                hunk = _Hunk(m.group(1), tops[seen] if tops else None)
                seen += 1
            in_header = False
        elif hunk is not None and line[:1] in ("+", "-"):
            hunk.line(line[1:])
    return tuple((p, tuple(n)) for p, n in files.items() if n and p.endswith(".py"))


class HunkCache(SQLiteCache):
    """Changed definition names by (repository, commit) (module doc)."""

    what = "history hunk cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS hunks_v2 (repo TEXT NOT NULL, sha TEXT NOT NULL, "
        "names TEXT NOT NULL, PRIMARY KEY (repo, sha)) WITHOUT ROWID"
    )
    insert = "INSERT OR REPLACE INTO hunks_v2 VALUES (?, ?, ?)"
    _delete = "DELETE FROM hunks_v2 WHERE repo = ? AND sha = ?"

    def load(self, repo: str) -> dict[str, CommitNames]:
        """Every commit stored for ``repo``; a damaged row is deleted and left out."""
        select = "SELECT sha, names FROM hunks_v2 WHERE repo = ?"
        rows = self._guarded(lambda conn: conn.execute(select, (repo,)).fetchall())
        out: dict[str, CommitNames] = {}
        for sha, names in rows:
            try:
                out[str(sha)] = _decode(names)
            except DamagedRowError as exc:
                self.drop_damaged(self._delete, (repo, sha), exc)
        return out

    def store(self, repo: str, found: Iterable[tuple[str, CommitNames]]) -> None:
        """Write the commits of ``found`` in one transaction."""
        for sha, names in found:
            self.queue((repo, sha, json.dumps([[p, list(n)] for p, n in names])))
        self.flush()


def _decode(value: object) -> CommitNames:
    try:
        decoded = json.loads(str(value))
        out = tuple((str(p), tuple(str(n) for n in names)) for p, names in decoded)
    except (ValueError, TypeError) as exc:
        raise DamagedRowError(f"names: {exc}") from None
    if not isinstance(decoded, list) or not all(isinstance(f[1], list) for f in decoded):
        raise DamagedRowError("names: not a list of [path, [name, ...]]")
    return out


class HunkLog:
    """The changed definition names of one repository's commits read so far (module
    doc); :meth:`names_of` gives them for rows of the repository's :class:`RepoLog`."""

    def __init__(self, log: RepoLog, cache: HunkCache | None = None) -> None:
        self.log = log
        self.cache = cache
        self.names: dict[str, CommitNames] = {} if cache is None else cache.load(log.key)
        self.read_from_git = 0
        self._head_read = False
        self._lock = threading.Lock()

    def names_of(self, rows: Sequence[int]) -> list[CommitNames]:
        """Per row of :attr:`log` (in order), the names its commit changed."""
        records = self.log.records
        with self._lock:
            missing = [records[r].sha for r in rows if records[r].sha not in self.names]
            if missing:
                self._read(missing)
        return [self.names.get(records[r].sha, ()) for r in rows]

    def _read(self, missing: list[str]) -> None:
        found: dict[str, CommitNames] = {}
        if not self._head_read:
            self._head_read = True
            head = head_sha(self.log.git_dir)
            if head is not None and head not in self.names:
                line = self._git(["--first-parent", head])
                found = {
                    sha: line.get(sha, ()) for sha in first_parent_shas(self.log.git_dir, head)
                }
        rest = [sha for sha in missing if sha not in found]
        if rest:
            read = self._git(["--no-walk=unsorted", "--stdin"], stdin="\n".join(rest) + "\n")
            found.update({sha: read.get(sha, ()) for sha in rest})
        self.names.update(found)
        self.read_from_git += len(found)
        if self.cache is not None and found:
            self.cache.store(self.log.key, found.items())

    def _git(self, args: list[str], stdin: str | None = None) -> dict[str, CommitNames]:
        """The names of the commits ``args`` select: two passes of the same ``git log
        -p``, one per hunk-header pattern (module doc)."""
        with tempfile.NamedTemporaryFile("w", suffix=".gitattributes", delete=False) as fh:
            fh.write(_ATTRIBUTES)
        try:
            outs = []
            for funcname in (DEF_FUNCNAME, CLASS_FUNCNAME):
                cmd = ["-c", f"core.attributesFile={fh.name}", "-c", f"{_DRIVER}={funcname}"]
                cmd += ["log", "--diff-merges=first-parent", "-p", "-U0", "-M", "--no-color"]
                cmd += ["--no-ext-diff", _FORMAT, *args, "--", "*.py"]
                outs.append(git_output(self.log.git_dir, cmd, "the patches", stdin=stdin))
        finally:
            Path(fh.name).unlink(missing_ok=True)
        return parse_patch_log(outs[0], hunk_headers(outs[1]))


_LOGS: dict[tuple[str, str | None], HunkLog] = {}
_LOGS_LOCK = threading.Lock()


def hunk_log(log: RepoLog, cache_dir: Path | None = None) -> HunkLog:
    """The process's :class:`HunkLog` of ``log``'s repository, loaded from the history
    cache in ``cache_dir`` (None: memory only) on first use."""
    cache_key = None if cache_dir is None else str(Path(cache_dir).resolve())
    key = (log.key, cache_key)
    with _LOGS_LOCK:
        found = _LOGS.get(key)
        if found is None or found.log is not log:
            if len(_LOGS) >= _MEMO_LIMIT:
                _LOGS.pop(next(iter(_LOGS)))
            cache = None if cache_dir is None else HunkCache.shared(Path(cache_dir) / CACHE_FILE)
            found = _LOGS[key] = HunkLog(log, cache)
        return found


def forget_hunk_logs() -> None:
    """Drop the process's hunk logs (tests: a new process's view of the cache)."""
    with _LOGS_LOCK:
        _LOGS.clear()

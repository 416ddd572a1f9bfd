"""Mine labelled questions from a repository's git history
(docs/datasets.md#mining-questions-from-git-history).

Each first-parent commit in a range is a candidate: its description (subject
plus body, trailers such as ``Signed-off-by:`` removed) is the query, and the
code files it *modified* are the gold (added and deleted files are left out; a
renamed-and-edited file counts under its old path, the one that exists at the
commit's parent). Changes that say little about code are dropped: bot authors,
reverts, merges, releases and version bumps, chore/docs/CI titles, titles of
fewer than ``min_title_words`` words, repeated titles, and changes touching
too many files. Oldest first, every ``test_every``-th kept change is ``test``,
the rest ``dev``.

The same ideas drive ``data/devsets/mine.py`` (which also maps paths onto a
released sdist); this is the small, general version for any local repository.
Gold paths are as of the commit's parent: run :func:`~retrieval_bench.datasets.jsonl.check_gold`
against the snapshot you bind the examples to.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_bench.datasets.swebench import is_test_path
from retrieval_bench.errors import DatasetError
from retrieval_bench.types import Example

# fmt: off
CODE_EXTENSIONS = frozenset({
    ".py", ".pyi", ".pyx", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs", ".java",
    ".kt", ".scala", ".js", ".jsx", ".mjs", ".ts", ".tsx", ".rb", ".php", ".swift", ".lua", ".sh",
})
# fmt: on
BOT_AUTHOR = re.compile(r"dependabot|renovate|pre-commit-ci|github-actions|\[bot\]", re.I)
SKIP_TITLE = re.compile(
    r"^(\[[^\]]*\]\s*)?(revert|merge|bump|release|prepare (for )?(the )?release|"
    r"v?\d+(\.\d+)+\b|version\b|changelog|(update|fix) (the )?(changelog|readme|docs?)\b|"
    r"(chore|ci|docs?|style|build|deps)(\([^)]*\))?!?:)"
    r"|\btypos?\b|^fixup!|^squash!",
    re.I,
)
TRAILER = re.compile(r"^\s*([\w-]+-by|change-id|cc|reviewed-on)\s*:", re.I)
PR_MERGE = re.compile(r"^Merge pull request #\d+ from \S+")
PR_SUFFIX = re.compile(r"\s*\(#\d+\)\s*$")
_SEP, _REC = "\x1f", "\x1e"
_FORMAT = f"--format={_REC}%H{_SEP}%P{_SEP}%an <%ae>{_SEP}%ct{_SEP}%s{_SEP}%b{_SEP}"


@dataclass(frozen=True)
class MineOptions:
    """Which changes become questions."""

    code_extensions: frozenset[str] = CODE_EXTENSIONS
    max_files: int = 5
    """Most modified code files (gold files) per change."""
    max_changed_files: int = 20
    """Changes touching more files than this (any status, any type) are dropped."""
    min_title_words: int = 4
    skip_merges: bool = True
    """Drop merge commits; when False, a merge counts as its diff against the first parent."""
    skip_tests: bool = True
    """Test files (see :func:`~retrieval_bench.datasets.swebench.is_test_path`) are never gold."""
    test_every: int = 5
    """Every n-th kept change (oldest first) gets split ``test``; 0 = all ``dev``."""
    gold_functions: bool = True
    """Derive each question's gold functions from the change's diff of its gold files
    (:mod:`~retrieval_bench.datasets.gold_functions`, on the parent's files)."""


@dataclass
class MineResult:
    """The mined examples, oldest first, and how many candidates each filter dropped."""

    examples: list[Example] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Commit:
    """One first-parent commit with its name-status changes (status, old path, new path)."""

    sha: str
    parents: tuple[str, ...]
    author: str
    subject: str
    body: str
    changes: tuple[tuple[str, str, str], ...]


def clean_message(subject: str, body: str) -> tuple[str, str]:
    """(title, query): the subject without a ``(#123)`` suffix; query = title + body, no trailers.

    For a GitHub merge ("Merge pull request #N from ...") the title is the
    first line of the body, which holds the pull request's title.
    """
    body_lines = body.splitlines()
    if PR_MERGE.match(subject):
        while body_lines and not body_lines[0].strip():
            body_lines.pop(0)
        subject = body_lines.pop(0).strip() if body_lines else ""
    title = PR_SUFFIX.sub("", subject).strip()
    kept = [line.rstrip() for line in body_lines if not TRAILER.match(line)]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return title, f"{title}\n\n{text}" if text else title


def gold_files(changes: tuple[tuple[str, str, str], ...], options: MineOptions) -> list[str]:
    """Code files the change modified, by their path before it (renamed-and-edited: old path)."""
    gold: dict[str, None] = {}
    for status, old, _new in changes:
        if status == "M" or (status.startswith("R") and status != "R100"):
            ext = Path(old).suffix.lower()
            if ext in options.code_extensions and not (options.skip_tests and is_test_path(old)):
                gold[old] = None
    return list(gold)


def mine_examples(
    repo: str | Path,
    rev_range: str | None = None,
    *,
    last: int | None = None,
    options: MineOptions | None = None,
    id_prefix: str | None = None,
) -> MineResult:
    """Mine questions from ``repo``'s first-parent history.

    ``rev_range`` is any ``git log`` range (``v1.0..main``); by default HEAD's
    whole history. ``last`` limits the walk to the newest N first-parent commits
    (the same as ``HEAD~N..HEAD`` but safe on short histories). Ids are
    ``<id_prefix><first 10 hex digits of the sha>``, the prefix defaulting to
    the repository folder's name and a dash; ``meta`` holds the full ``commit``.
    """
    repo = Path(repo)
    options = options or MineOptions()
    prefix = f"{repo.resolve().name}-" if id_prefix is None else id_prefix
    result = MineResult()
    seen_titles: set[str] = set()
    for commit in reversed(list(iter_commits(repo, rev_range, last, options.skip_merges))):
        reason = _drop_reason(commit, options)
        title, query = clean_message(commit.subject, commit.body)
        if reason is None:
            reason = _title_reason(title, seen_titles, options)
        gold = gold_files(commit.changes, options) if reason is None else []
        if reason is None and not gold:
            reason = "no_modified_code_file"
        elif reason is None and len(gold) > options.max_files:
            reason = "too_many_modified_code_files"
        if reason is not None:
            result.dropped[reason] += 1
            continue
        seen_titles.add(title.lower())
        position = len(result.examples) + 1
        functions: tuple[str, ...] = ()
        locagent: tuple[str, ...] | None = None
        if options.gold_functions:
            functions, locagent = commit_functions(repo, commit.sha, commit.parents, gold)
        example = Example(
            id=f"{prefix}{commit.sha[:10]}",
            query=query,
            gold_files=tuple(gold),
            gold_functions=functions,
            gold_functions_locagent=locagent,
            split="test"
            if options.test_every > 0 and position % options.test_every == 0
            else "dev",
            meta={"commit": commit.sha},
        )
        result.examples.append(example)
    return result


def commit_functions(
    repo: Path, sha: str, parents: Sequence[str], gold: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Gold functions of commit ``sha``'s change to its ``gold`` files (Python files
    only), derived on its first parent's files by this project's rules and by
    LocAgent's (docs/metrics.md#conventions)."""
    from retrieval_bench.datasets.gold_functions import at_commit, entities_in, file_changes
    from retrieval_bench.datasets.gold_locagent import locagent_in

    py = [p for p in gold if p.endswith(".py")]
    if not py or not parents:
        return (), ()
    parent = parents[0]
    cmd = ["git", "-C", str(repo), "diff", "-M", parent, sha, "--", *py]
    diff = subprocess.run(cmd, capture_output=True, check=True).stdout.decode("utf-8", "replace")
    changes = file_changes(diff, at_commit(repo, parent))  # each parent file read once
    return tuple(entities_in(changes)), tuple(locagent_in(changes))


def _drop_reason(commit: Commit, options: MineOptions) -> str | None:
    if not commit.parents:
        return "root_commit"
    if len(commit.parents) > 1 and options.skip_merges:
        return "merge"
    if BOT_AUTHOR.search(commit.author):
        return "bot_author"
    if len(commit.changes) > options.max_changed_files:
        return "too_many_changed_files"
    return None


def _title_reason(title: str, seen: set[str], options: MineOptions) -> str | None:
    if not title or SKIP_TITLE.search(title):
        return "skipped_title"
    if len(re.findall(r"\w+", title)) < options.min_title_words:
        return "short_title"
    if title.lower() in seen:
        return "duplicate_title"
    return None


def iter_commits(
    repo: Path, rev_range: str | None = None, last: int | None = None, skip_merges: bool = True
) -> list[Commit]:
    """First-parent commits of ``rev_range`` (default HEAD), newest first, with name-status."""
    if shutil.which("git") is None:
        raise DatasetError(f"cannot mine {repo}: git is not installed; install git")
    if not repo.is_dir():
        raise DatasetError(f"cannot mine {repo}: not a directory; give a git repository's path")
    if rev_range and rev_range.startswith("-"):  # git would read it as an option
        raise DatasetError(
            f"cannot mine {repo}: --range {rev_range!r} starts with '-'; "
            "give a revision range such as v1.0..HEAD"
        )
    cmd = ["git", "-C", str(repo), "log", "--first-parent", "-z", _FORMAT, "--name-status", "-M"]
    if not skip_merges:
        cmd.append("--diff-merges=first-parent")
    if last is not None:
        cmd.append(f"--max-count={int(last)}")
    cmd += [rev_range or "HEAD", "--"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        why = lines[-1] if lines else f"git exited with {proc.returncode}"
        raise DatasetError(
            f"cannot read the history of {repo} ({rev_range or 'HEAD'}): {why}; "
            "check that it is a git repository and the range exists"
        )
    return [_parse_record(rec) for rec in proc.stdout.split(_REC) if rec.strip("\0\n")]


def name_status_changes(rest: str) -> list[tuple[str, str, str]]:
    """(status, old path, new path) of each file of a ``git log -z --name-status``
    record's tail (the old and new path are one path unless renamed or copied)."""
    tokens = rest.lstrip("\0\n").split("\0")
    changes: list[tuple[str, str, str]] = []
    i = 0
    while i < len(tokens):
        status = tokens[i].strip()
        if not status:
            i += 1
            continue
        if status[0] in "RC" and i + 2 < len(tokens):
            changes.append((status, tokens[i + 1], tokens[i + 2]))
            i += 3
        elif i + 1 < len(tokens):
            changes.append((status, tokens[i + 1], tokens[i + 1]))
            i += 2
        else:
            break
    return changes


def _parse_record(record: str) -> Commit:
    sha, parents, author, _ctime, subject, body, rest = record.split(_SEP, 6)
    changes = name_status_changes(rest)
    return Commit(sha, tuple(parents.split()), author, subject.strip(), body, tuple(changes))

"""The commit log of the ``history`` stage: parsing git's records, and a snapshot's
history with its files named as at the snapshot (renames followed, deleted files
ended) (docs/stages.md#history)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.errors import SnapshotError
from retrieval_bench.retrieval.history_log import CommitRecord, RepoLog, parse_record
from retrieval_bench.retrieval.history_scores import churn, co_change, recency
from retrieval_bench.retrieval.history_view import SnapshotHistory


def _sha(n: int) -> str:
    return f"{n:040x}"


def _log(*changes: tuple[tuple[str, str, str], ...]) -> RepoLog:
    """A log of one line of commits 1..n (commit i changing ``changes[i-1]``), no git."""
    log = RepoLog(Path("/nonexistent"))
    log._add(
        CommitRecord(_sha(i), (_sha(i - 1),) if i > 1 else (), i, f"c{i}", "", c)
        for i, c in enumerate(changes, 1)
    )
    return log


def test_a_git_log_record_is_parsed() -> None:
    record = (
        f"{_sha(2)}\x1f{_sha(1)} {_sha(9)}\x1f1700000000\x1fFix it\x1fbody line\n\x1f\n\0"
        "M\0a.py\0R087\0old/b.py\0new/b.py\0D\0gone.py\0"
    )
    assert parse_record(record) == CommitRecord(
        _sha(2), (_sha(1), _sha(9)), 1700000000, "Fix it", "body line",
        (("M", "a.py", "a.py"), ("R", "old/b.py", "new/b.py"), ("D", "gone.py", "gone.py")),
    )  # fmt: skip
    root = parse_record(f"{_sha(1)}\x1f\x1f5\x1fstart\x1f\x1f\n\0A\0a.py\0")
    assert parse_record(record).parent == _sha(1)
    assert root.parent is None and root.parents == () and root.changes == (("A", "a.py", "a.py"),)


def test_renames_are_followed_and_a_deleted_file_ends_its_history() -> None:
    log = _log(
        (("A", "x.py", "x.py"), ("A", "y.py", "y.py")),  # 1
        (("M", "x.py", "x.py"), ("M", "y.py", "y.py")),  # 2
        (("R", "x.py", "pkg/x.py"), ("D", "y.py", "y.py")),  # 3: x moves, y is deleted
        (("A", "y.py", "y.py"),),  # 4: another y.py
        (("R", "pkg/x.py", "pkg/z.py"), ("M", "y.py", "y.py")),  # 5 = S
        (("M", "pkg/z.py", "pkg/z.py"),),  # 6: after S
    )
    history = SnapshotHistory.of(log, _sha(5))
    assert len(history) == 5 and history.rows.tolist() == [4, 3, 2, 1, 0]
    assert history.files == [
        ("pkg/z.py", "y.py"),  # 5
        ("y.py",),  # 4
        ("pkg/z.py",),  # 3: the old y.py's deletion counts for no file of S
        ("pkg/z.py",),  # 2: x.py is pkg/z.py at S; the old y.py is not S's y.py
        ("pkg/z.py",),  # 1
    ]
    assert history.n_changed == [2, 1, 2, 2, 2]
    assert history.ages_of == {"pkg/z.py": [0, 2, 3, 4], "y.py": [0, 1]}
    assert churn(history, None) == pytest.approx({"pkg/z.py": 1.6094379, "y.py": 1.0986123})
    assert recency(history, 1.0) == {"pkg/z.py": 1.0, "y.py": 1.0}
    # y.py with pkg/z.py in 1 of its 2 commits (5), with the old y.py's commits not its own
    assert co_change(history, {"y.py": 1.0}, None) == {"pkg/z.py": 0.5}
    assert history.age_of_row.tolist() == [4, 3, 2, 1, 0, -1]


def test_a_commit_git_does_not_have_is_one_line() -> None:
    log = _log((("A", "a.py", "a.py"),))
    with pytest.raises(SnapshotError, match="history: cannot read the history of") as exc:
        log.chain(_sha(7))
    assert "\n" not in str(exc.value)
    with pytest.raises(SnapshotError, match="is not a full commit sha"):
        log.chain("--all")

"""The ``history`` stage on a five-commit repository, scores by hand
(tests/unit/retrieval/history_repo.py; docs/stages.md#history)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_bench.contracts.params import StageServices
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError, SnapshotError
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.history import HistoryRetriever
from retrieval_bench.retrieval.history_log import forget_logs
from retrieval_bench.retrieval.history_text import message
from retrieval_bench.snapshot import Snapshot, open_folder, open_snapshot
from retrieval_bench.snapshot.sources import open_repo
from retrieval_bench.store import sqlite_cache
from tests.unit.datasets.gitrepo import GitRepo, needs_git
from tests.unit.retrieval.conftest import window_corpus
from tests.unit.retrieval.history_repo import SIM, history_repo

pytestmark = needs_git
A, B, HELPERS = "file:src/a.py", "file:src/b.py", "file:src/helpers.py"


@pytest.fixture(autouse=True)
def _fresh_logs() -> None:
    forget_logs()  # each test reads its repository as a new process would


@pytest.fixture
def repo(tmp_path: Path) -> tuple[GitRepo, list[str]]:
    return history_repo(tmp_path / "proj")


def _at(
    repo: tuple[GitRepo, list[str]], tmp_path: Path, commit: int, *, parent: bool = False
) -> tuple[Snapshot, Corpus]:
    """The snapshot of commit c<commit> (its parent with ``parent``) and its corpus, the
    workspace's caches in ``tmp_path / 'cache'``."""
    git, shas = repo
    cache = tmp_path / "cache"
    snap = open_repo("org/proj", shas[commit - 1], cache / "snapshots", source=str(git.path),
                     parent=parent)  # fmt: skip
    corpus = window_corpus(snap.root)
    corpus.cache_dir = cache
    return snap, corpus


def _search(snap: Snapshot, corpus: Corpus, query: str, k: int = 10, **params: object) -> dict:
    stage = HistoryRetriever(snapshot=snap, **params)
    stage.index(corpus)
    return stage.search({"q": query}, k).scores["q"]


def test_the_messages_tokenise_as_the_hand_computation_says(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    stage = HistoryRetriever(snapshot=snap)
    stage.index(corpus)
    assert stage.history is not None
    records = [stage.history.log.records[int(r)] for r in stage.history.rows]
    tok = CodeTokenizer()
    assert [tok(message(r)) for r in records] == [
        ["fix", "parser", "crash", "unicode", "input"],
        ["rename", "helpers", "module"],
        ["fix", "crash", "parser", "input", "empty"],
        ["initial", "project", "layout"],
    ]
    assert stage.history.n_changed == [1, 1, 3, 4]


def test_similar_fixes_by_hand(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 5, parent=True)  # the question at c5: history c1..c4
    assert snap.fingerprint == repo[1][3]
    got = _search(snap, corpus, "parser crash", half_life=2)
    # c4 (age 0, 1 file): a += sim; c2 (age 2, 3 files: a, b, old.py deleted): sim/3 · 0.5
    assert list(got) == [A, B]
    assert got[A] == pytest.approx(SIM * (1 + 1 / 6), rel=1e-12)
    assert got[B] == pytest.approx(SIM / 6, rel=1e-12)
    default = _search(snap, corpus, "parser crash")  # half_life 500
    assert default[B] == pytest.approx(SIM / 3 * 0.5 ** (2 / 500), rel=1e-12)
    no_decay = _search(snap, corpus, "parser crash", half_life=0)
    assert no_decay[A] == pytest.approx(SIM * (1 + 1 / 3), rel=1e-12)
    # top 1 of two equal messages: the newer (c4) only
    assert _search(snap, corpus, "parser crash", similar_k=1) == {A: pytest.approx(SIM)}
    assert _search(snap, corpus, "nothing matches here") == {}


def test_a_later_commit_changes_nothing(repo, tmp_path) -> None:
    """c5 ("fix parser crash again": b and helpers) would change every number; read the
    whole log first (a snapshot at c5), then ask at c4: the same scores as alone."""
    late, late_corpus = _at(repo, tmp_path, 5)
    leaked = _search(late, late_corpus, "parser crash", half_life=2)
    assert HELPERS in leaked and leaked[B] > SIM / 6  # c5 counts at c5
    snap, corpus = _at(repo, tmp_path, 5, parent=True)
    got = _search(snap, corpus, "parser crash", half_life=2)
    assert got == {A: pytest.approx(SIM * 7 / 6, rel=1e-12), B: pytest.approx(SIM / 6, rel=1e-12)}
    assert _search(snap, corpus, "", signal="churn", window=None)[B] == pytest.approx(math.log(3))


def test_a_git_url_snapshot_reads_the_same_history(repo, tmp_path) -> None:
    git, shas = repo
    snap = open_snapshot(f"git+{git.path}@{shas[3]}", tmp_path / "cache" / "snapshots")
    assert snap.kind == "git" and snap.git_dir is not None and snap.fingerprint == shas[3]
    corpus = window_corpus(snap.root)
    got = _search(snap, corpus, "parser crash", half_life=2)
    assert got == {A: pytest.approx(SIM * 7 / 6, rel=1e-12), B: pytest.approx(SIM / 6, rel=1e-12)}


def test_churn_follows_the_rename_and_counts_the_window(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    every = _search(snap, corpus, "anything", signal="churn", window=None)
    # a: c1 c2 c4; b: c1 c2; helpers: c1 (as src/c.py) and c3; old.py deleted: none
    assert every == {
        A: pytest.approx(math.log(4)),
        B: pytest.approx(math.log(3)),
        HELPERS: pytest.approx(math.log(3)),
    }
    assert list(every) == [A, B, HELPERS]  # ties by path
    newest_two = _search(snap, corpus, "anything", signal="churn", window=2)
    assert newest_two == {A: pytest.approx(math.log(2)), HELPERS: pytest.approx(math.log(2))}
    assert _search(snap, corpus, "x", k=1, signal="churn", window=None) == {
        A: pytest.approx(math.log(4))
    }


def test_recency(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    got = _search(snap, corpus, "anything", signal="recency", half_life=2)
    assert got == {A: 1.0, HELPERS: pytest.approx(0.5**0.5), B: pytest.approx(0.5)}
    assert list(got) == [A, HELPERS, B]


def test_co_change_from_a_named_path_and_a_named_stem(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    stage = HistoryRetriever(snapshot=snap, signal="co-change", max_files=None)
    stage.index(corpus)
    # a: c1 (a b c old), c2 (a b old), c4 (a): b with a in 2 of 3, helpers (c.py) in 1 of 3
    got = stage.search({"q": "crash in src/a.py"}, 10).scores["q"]
    assert got == {B: pytest.approx(2 / 3), HELPERS: pytest.approx(1 / 3)}
    assert stage.artifacts["q"] == {"named": ["src/a.py"]}
    capped = _search(snap, corpus, "crash in src/a.py", signal="co-change", max_files=3)
    assert capped == {B: pytest.approx(1 / 2)}  # c1 changed 4 files: left out
    # `helpers` names src/helpers.py by its stem (weight 0.5): c1 and c3 changed it
    stem = _search(snap, corpus, "the `helpers` module breaks", signal="co-change",
                   max_files=None)  # fmt: skip
    assert stem == {A: pytest.approx(0.25), B: pytest.approx(0.25)}
    assert _search(snap, corpus, "no file named", signal="co-change") == {}


def test_only_files_of_the_snapshots_corpus_are_returned(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    fewer = Corpus(corpus.root, [c for c in corpus.chunks if c.path != "src/a.py"])
    got = _search(snap, fewer, "parser crash", signal="churn", window=None)
    assert set(got) == {B, HELPERS}


def test_the_log_is_read_once_and_the_cache_serves_the_next_process(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    stage = HistoryRetriever(snapshot=snap)
    stage.index(corpus)
    # the first read takes HEAD's whole first-parent line (5 commits), not only the 4
    # the snapshot sees: later snapshots then need no git at all
    assert stage.history is not None and stage.history.log.read_from_git == 5
    assert len(stage.history.rows) == 4
    first = stage.search({"q": "parser crash"}, 10).scores
    assert (tmp_path / "cache" / "history" / "history.sqlite").is_file()
    forget_logs()
    again = HistoryRetriever(snapshot=snap)
    again.index(_at(repo, tmp_path, 4)[1])  # a new process: a new corpus
    assert again.history is not None and again.history.log.read_from_git == 0
    assert again.search({"q": "parser crash"}, 10).scores == first
    later, later_corpus = _at(repo, tmp_path, 5)  # one more commit: already in the cache
    newer = HistoryRetriever(snapshot=later)
    newer.index(later_corpus)
    assert newer.history is not None and newer.history.log.read_from_git == 0
    assert len(newer.history.rows) == 5
    git, shas = repo
    shas.append(git.commit("Add a sixth commit after HEAD was read", {"src/late.py": "x = 1\n"}))
    newest, newest_corpus = _at(repo, tmp_path, 6)  # past the HEAD read: only it is read
    last = HistoryRetriever(snapshot=newest)
    last.index(newest_corpus)
    assert last.history is not None and last.history.log.read_from_git == 1


def test_a_damaged_cache_is_moved_aside_and_rebuilt(repo, tmp_path, caplog, monkeypatch) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    want = _search(snap, corpus, "parser crash")
    forget_logs()
    monkeypatch.setattr(sqlite_cache, "_SHARED", {})  # a new process: no open connection
    db = tmp_path / "cache" / "history" / "history.sqlite"
    for side in db.parent.glob("history.sqlite-*"):
        side.unlink()
    db.write_bytes(b"this is not a database" * 100)
    assert _search(snap, _at(repo, tmp_path, 4)[1], "parser crash") == want
    assert list(db.parent.glob("history.sqlite.corrupt-*"))
    assert "history cache" in caplog.text and "was corrupt" in caplog.text


def test_a_damaged_row_is_dropped_and_its_commit_read_again(repo, tmp_path, caplog) -> None:
    snap, corpus = _at(repo, tmp_path, 4)
    want = _search(snap, corpus, "parser crash")
    forget_logs()
    from retrieval_bench.retrieval.history_log import HistoryCache

    cache = HistoryCache.shared(tmp_path / "cache" / "history" / "history.sqlite")
    cache.insert_many("UPDATE commits_v1 SET changes = 'not json' WHERE sha = ?", [(repo[1][1],)])
    stage = HistoryRetriever(snapshot=snap)
    stage.index(_at(repo, tmp_path, 4)[1])
    assert stage.history is not None and stage.history.log.read_from_git == 1
    assert stage.search({"q": "parser crash"}, 10).scores["q"] == want
    assert "history cache" in caplog.text and "damaged row" in caplog.text


def test_a_snapshot_that_is_not_a_commit_fails_the_stage_with_one_line(tmp_path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("A = 1\n")
    snap = open_folder(tmp_path)
    stage = HistoryRetriever(snapshot=snap)
    with pytest.raises(SnapshotError, match="is a folder, not a git commit") as exc:
        stage.index(window_corpus(tmp_path))
    assert "\n" not in str(exc.value)
    with pytest.raises(SnapshotError, match="no snapshot given"):
        HistoryRetriever().index(window_corpus(tmp_path))


def test_the_harness_passes_the_snapshot_and_the_values_are_checked(tmp_path) -> None:
    snap = Snapshot(tmp_path, "x", "repo", "0" * 40, git_dir=tmp_path)
    made = RETRIEVERS.create("history", {"signal": "churn"}, StageServices(snapshot=snap))
    assert isinstance(made, HistoryRetriever) and made.snapshot is snap
    by_keyword = RETRIEVERS.create("history", snapshot=snap)  # a service, not a parameter
    assert isinstance(by_keyword, HistoryRetriever) and by_keyword.snapshot is snap
    bm25 = RETRIEVERS.create("bm25", {}, StageServices(snapshot=snap))  # not declared: not given
    assert not hasattr(bm25, "snapshot")
    assert RETRIEVERS.type_of("history").ranks_for({"signal": "churn"}, []) == "files"
    with pytest.raises(ConfigError, match="recency needs half_life > 0"):
        HistoryRetriever(signal="recency", half_life=0)
    with pytest.raises(ConfigError, match="recency needs half_life"):
        HistoryRetriever.check_config({"signal": "recency", "half_life": None}, [])
    HistoryRetriever.check_config({"signal": "recency"}, [])  # the default half-life
    with pytest.raises(ConfigError, match="signal"):
        HistoryRetriever(signal="blame")
    with pytest.raises(ConfigError, match="similar_k"):
        HistoryRetriever(similar_k=0)


def test_query_issue_reads_the_report_as_bm25_query_issue_does(repo, tmp_path) -> None:
    """A traceback frame's site-packages path names no snapshot file, so ``query:
    issue`` drops its tokens ("unicode", "input": c4's words) and scores the title
    alone, as for "parser crash"; the raw text counts them: c4 (src/a.py) has both and
    c2 (src/a.py, src/b.py) "input", so both files gain."""
    snap, corpus = _at(repo, tmp_path, 5, parent=True)
    report = (
        "parser crash\n\nTraceback (most recent call last):\n"
        '  File "/usr/lib/site-packages/unicode/input.py", line 3, in main\n'
    )
    plain = _search(snap, corpus, "parser crash", half_life=0)
    issue = HistoryRetriever(snapshot=snap, half_life=0, query="issue")
    issue.index(corpus)
    assert issue.search({"q": report}, 10).scores["q"] == pytest.approx(plain)
    raw = _search(snap, corpus, report, half_life=0)
    assert raw[A] > plain[A] and raw[B] > plain[B]
    with pytest.raises(ConfigError, match="query"):
        HistoryRetriever(query="words")


def test_a_weighted_bag_counts_as_that_many_repeats(repo, tmp_path) -> None:
    snap, corpus = _at(repo, tmp_path, 5, parent=True)
    stage = HistoryRetriever(snapshot=snap)
    stage.index(corpus)
    text = stage._text
    assert text is not None
    repeated = text.similarities("parser parser crash crash crash")
    assert repeated and text.similarities({"parser": 2.0, "crash": 3.0, "absent": 9.0}) == (
        pytest.approx(repeated)
    )

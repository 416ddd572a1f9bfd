"""``history``: files ranked by what the repository's past says about them
(docs/stages.md#history).

BugLocator's idea (Zhou, Zhang & Lo, ICSE 2012, "Where should the bugs be fixed?"):
the files fixed for similar past bug reports are likely to be fixed again; with
churn and recency priors and co-change. One ``signal`` per configured stage, so a
config can carry several ``history`` stages under their own ids, each an input
that ``ltr`` can read:

* ``similar-fixes`` (default): SimiScore over the commit messages most similar to
  the question (:mod:`~retrieval_bench.retrieval.history_text`,
  :func:`~retrieval_bench.retrieval.history_scores.similar_fixes`);
* ``churn``, ``recency``: priors, the same for every question of a snapshot;
* ``co-change``: the files changed together with the files the question names
  (paths, dotted modules, and identifiers equal to a file's stem);
* ``similar-functions``: SimiScore one level down, the functions and classes those
  similar commits changed (git's hunk headers, read once per repository:
  :mod:`~retrieval_bench.retrieval.history_hunks`), resolved in the snapshot's files
  (:mod:`~retrieval_bench.retrieval.history_functions`). Its run ranks ``entity:`` ids,
  so it is scored at function level, and at file level each file at its best entity.

**No future leakage.** A question's snapshot is one commit S (a ``repo`` +
``commit`` row, with ``commit_is: parent`` the parent of the question's commit, or a
``git+URL@commit`` snapshot): only S and its first-parent ancestors are read
(:class:`~retrieval_bench.retrieval.history_view.SnapshotHistory`), for the scores and
for the BM25 statistics alike. The stage learns S and the repository from the
snapshot the harness passes it (``uses_snapshot``; ``Snapshot.git_dir``, the mirror);
a snapshot that is not a commit (a folder, a tarball, an sdist) fails the stage for
its questions with one line saying so, and the run goes on.

The repository's log is read once per process and kept in the workspace's history
cache (:mod:`~retrieval_bench.retrieval.history_log`); a snapshot then costs its
first-parent walk and arithmetic in memory. The run ranks files (``file:<path>``
ids, as ``bm25-files``): at most ``k`` per question, the files of the snapshot's
corpus with a score above 0, ties by path (``similar-functions``: ``entity:`` ids, ties
by id). Test files are not filtered.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.contracts.stage import Ranks
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError, SnapshotError
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.history_functions import resolve, similar_functions
from retrieval_bench.retrieval.history_hunks import HunkLog, hunk_log
from retrieval_bench.retrieval.history_log import RepoLog, repo_log
from retrieval_bench.retrieval.history_scores import (
    churn,
    co_change,
    recency,
    similar_fixes,
    top_similar,
)
from retrieval_bench.retrieval.history_text import HistoryText, MessageIndex
from retrieval_bench.retrieval.history_view import SnapshotHistory
from retrieval_bench.retrieval.issue_query import (
    MAX_AMBIGUOUS,
    MODULE_WEIGHT,
    IssueReader,
    corpus_reader,
    issue_bag,
)
from retrieval_bench.runs.file_ids import entity_id, file_id
from retrieval_bench.types import Run

if TYPE_CHECKING:
    from retrieval_bench.snapshot import Snapshot

Signal = Literal["similar-fixes", "churn", "recency", "co-change", "similar-functions"]
Query = Literal["raw", "issue"]
CACHE_FOLDER = "history"
"""The history cache's folder in the workspace's cache (docs/architecture.md#caches)."""
_ARTIFACT_COMMITS = 5
"""Similar commits named in a question's artifact."""
_INDEXES: weakref.WeakKeyDictionary[RepoLog, MessageIndex] = weakref.WeakKeyDictionary()


def message_index(log: RepoLog) -> MessageIndex:
    """The process's message index of ``log`` (the default code tokenizer)."""
    found = _INDEXES.get(log)
    if found is None:
        found = _INDEXES[log] = MessageIndex(log, CodeTokenizer())
    return found


def file_stems(paths: Sequence[str]) -> dict[str, list[str]]:
    """Casefolded file name without its extension → the paths with it (``__init__``
    and other names starting with ``_`` left out)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0].casefold()
        if stem and not stem.startswith("_"):
            out.setdefault(stem, []).append(path)
    return out


def named_files(text: str, reader: IssueReader, stems: Mapping[str, list[str]]) -> dict[str, float]:
    """The snapshot files ``text`` names, with weights: a path 1, a dotted module and an
    identifier equal to a file's stem 0.5, each divided among its equally good matches
    (:class:`~retrieval_bench.retrieval.issue_query.IssueReader`; a stem matching more
    than three files names none)."""
    issue = reader.read(text)
    named = dict(issue.paths)
    for symbol in issue.parsed.symbols:
        found = stems.get(symbol.casefold(), [])
        if 0 < len(found) <= MAX_AMBIGUOUS:
            for path in found:
                named[path] = max(named.get(path, 0.0), MODULE_WEIGHT / len(found))
    return named


class HistoryRetriever(Retriever):
    """Files by the repository's history up to the snapshot's commit (module doc).

    Parameters (:class:`Params`):
        signal: "similar-fixes" | "churn" | "recency" | "co-change" |
            "similar-functions".
        similar_k: the most similar past commits summed (similar-fixes,
            similar-functions).
        half_life: commits after which a commit's weight halves (similar-fixes,
            similar-functions, recency); 0 or null: no decay (not allowed for recency).
        top_files: the files whose names similar-functions resolves (its best files).
        window: the newest commits churn counts (null: all).
        max_files: commits changing more files are left out of co-change (null: none).
        k1, b: BM25 constants of the message similarity.
        query: what the message similarity reads of the question (similar-fixes,
            similar-functions): "raw", its tokens; "issue", the weighted bag that
            ``bm25 query: issue`` scores (docs/stages.md#reading-an-issue).

    Keywords besides: ``snapshot``, the :class:`~retrieval_bench.snapshot.Snapshot` of
    the corpus (the harness passes it); ``name``, the run name.
    """

    class Params(StageParams):
        signal: Signal = "similar-fixes"
        similar_k: int = Field(default=50, ge=1)
        half_life: float | None = Field(default=500.0, ge=0)
        window: int | None = Field(default=500, ge=1)
        max_files: int | None = Field(default=30, ge=1)
        k1: float = Field(default=1.5, ge=0)
        b: float = Field(default=0.75, ge=0, le=1)
        top_files: int = Field(default=20, ge=1)
        query: Query = "raw"

    params: HistoryRetriever.Params
    uses_snapshot = True

    def __init__(
        self,
        params: HistoryRetriever.Params | None = None,
        /,
        *,
        snapshot: Snapshot | None = None,
        name: str = "history",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.check_config(p.model_dump(), ())
        super().__init__()
        self.name = name
        self.snapshot = snapshot
        self.history: SnapshotHistory | None = None
        self._paths: set[str] = set()
        self._text: HistoryText | None = None
        self._reader: IssueReader | None = None
        self._stems: dict[str, list[str]] = {}
        self._prior: list[tuple[str, float]] | None = None
        self._hunks: HunkLog | None = None
        self._corpus: Corpus | None = None

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks:
        """``files`` (``file:`` ids); ``chunks`` for ``similar-functions``, whose
        ``entity:`` ids stand for functions."""
        return "chunks" if params.get("signal") == "similar-functions" else "files"

    @classmethod
    def check_config(
        cls, params: Mapping[str, Any], inputs: Sequence[tuple[str, Ranks | None]]
    ) -> None:
        """``signal: recency`` needs a half-life (without one every file scores 1)."""
        default = cls.Params.model_fields["half_life"].default
        if params.get("signal") == "recency" and not params.get("half_life", default):
            raise ConfigError("history: signal recency needs half_life > 0")

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """The history of the snapshot's commit (read from the repository's log, cached),
        and what the signal needs of it."""
        snap = self.snapshot
        if snap is None:
            raise SnapshotError(
                "history: no snapshot given: pass snapshot= (a git or repo snapshot), "
                "or run the stage in a benchmark"
            )
        if snap.git_dir is None:
            raise SnapshotError(
                f"history: snapshot {snap.source!r} is a {snap.kind}, not a git commit: "
                "the stage reads the history of a repo + commit row or a git+URL@commit snapshot"
            )
        cache = None if corpus.cache_dir is None else Path(corpus.cache_dir) / CACHE_FOLDER
        log = repo_log(snap.git_dir, cache)
        sha = snap.fingerprint
        history = corpus.derived(("history", log.key, sha), lambda: SnapshotHistory.of(log, sha))
        self.history, self._paths, self._prior = history, set(corpus.paths), None
        p = self.params
        if p.signal in ("similar-fixes", "similar-functions"):
            self._text = HistoryText(history, message_index(history.log), p.k1, p.b)
            if p.query == "issue":
                self._reader = corpus_reader(corpus)
        if p.signal == "similar-functions":
            self._hunks, self._corpus = hunk_log(history.log, cache), corpus
        elif p.signal == "co-change":
            self._reader = corpus_reader(corpus)
            self._stems = file_stems(corpus.paths)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` files per question, as ``file:<path>`` ids."""
        if self.history is None:
            raise RuntimeError("history: index() a corpus before search()")
        return Run(
            self.name, {qid: self._search_one(qid, text, k) for qid, text in queries.items()}
        )

    def _similar(self, qid: str, text: str) -> list[tuple[int, float]]:
        """The ``similar_k`` past commits most similar to ``text`` as ``(age, sim)``
        (the first few kept as the question's artifact)."""
        history, p = self.history, self.params
        assert history is not None and self._text is not None
        query: str | dict[str, float] = text
        if p.query == "issue":
            assert self._reader is not None
            query = issue_bag(self._reader.read(text), self._text.index.tokenizer)
        similar = top_similar(self._text.similarities(query), p.similar_k)
        records = history.log.records
        self.artifacts[qid] = {"similar": [
            [records[int(history.rows[age])].sha[:12], age, round(sim, 4)]
            for age, sim in similar[:_ARTIFACT_COMMITS]
        ]}  # fmt: skip
        return similar

    def function_scores(self, qid: str, text: str) -> dict[str, float]:
        """Per-entity scores of one question (``similar-functions``): ``path:Qualified.name``
        → score, the entities of the question's ``top_files`` best files."""
        history, hunks, corpus = self.history, self._hunks, self._corpus
        assert history is not None and hunks is not None and corpus is not None
        similar = self._similar(qid, text)
        ages = [age for age, _ in similar]
        names = hunks.names_of([int(history.rows[a]) for a in ages])
        by_name = similar_functions(history, dict(zip(ages, names, strict=True)), similar,
                                    self.params.half_life)  # fmt: skip
        return resolve(corpus, self._paths, by_name, self.params.top_files)

    def file_scores(self, qid: str, text: str) -> dict[str, float]:
        """Per-file scores of one question, every file the history names (its artifact,
        for similar-fixes and co-change, kept under ``qid``); for ``similar-functions``,
        each file's best entity."""
        history, p = self.history, self.params
        assert history is not None
        if p.signal == "similar-fixes":
            return similar_fixes(history, self._similar(qid, text), p.half_life)
        if p.signal == "similar-functions":
            best: dict[str, float] = {}
            for entity, s in self.function_scores(qid, text).items():
                path = entity.rpartition(":")[0]
                best[path] = max(best.get(path, 0.0), s)
            return best
        if p.signal == "co-change":
            assert self._reader is not None
            named = named_files(text, self._reader, self._stems)
            self.artifacts[qid] = {"named": sorted(named)}
            return co_change(history, named, p.max_files)
        if p.signal == "churn":
            return churn(history, p.window)
        assert p.half_life
        return recency(history, p.half_life)

    def _ranked(self, scores: Mapping[str, float]) -> list[tuple[str, float]]:
        kept = [(p, s) for p, s in scores.items() if s > 0 and p in self._paths]
        return sorted(kept, key=lambda kv: (-kv[1], kv[0]))

    def _search_one(self, qid: str, text: str, k: int) -> dict[str, float]:
        if k <= 0:
            return {}
        if self.params.signal == "similar-functions":
            scores = self.function_scores(qid, text)
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
            return {entity_id(e): s for e, s in ranked[:k] if s > 0}
        if self.params.signal in ("churn", "recency"):  # a prior: one ranking per snapshot
            if self._prior is None:
                self._prior = self._ranked(self.file_scores(qid, text))
            ranked = self._prior
        else:
            ranked = self._ranked(self.file_scores(qid, text))
        return {file_id(p): s for p, s in ranked[:k]}

    def __repr__(self) -> str:
        commits = 0 if self.history is None else len(self.history)
        return f"HistoryRetriever(signal={self.params.signal!r}, commits={commits})"

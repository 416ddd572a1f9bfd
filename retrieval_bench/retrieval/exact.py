"""``exact``: ripgrep over the working tree for words from the question.

Rungs (``terms=``; docs/stages.md#exact):

* ``"raw"``: the question's words, minus stopwords, of 3+ characters;
* ``"identifiers"`` (default): identifier-like strings in the question —
  `` `backticked` `` text, snake_case, camelCase/PascalCase, dotted.names,
  paths and file names (plus their stem), CONSTANTS, ``calls()`` — falling
  back to the raw words when there are none (or only acronyms like ``API``);
* ``"llm"``: keywords proposed by a language model: ``llm`` (an
  :class:`~retrieval_bench.retrieval.keywords.LLMKeywordProvider` asks it) or
  any ``keyword_provider`` (``question -> list[str]``), cleaned like the rest;
* ``"issue"``: the symbols and literals that
  :mod:`~retrieval_bench.retrieval.issue_query` reads in a bug report, strongest
  source first, each term's weight multiplied by its source weight; a term
  matched on a line that *defines* it (``def name``, ``class Name``, a
  module-level ``name =``) counts ``1 + def_weight`` times, and the best chunk
  of each snapshot file the issue names (weight w_p) gains
  ``path_weight · w_p · max_t weight(t)`` (docs/stages.md#reading-an-issue).

One real ``rg`` process per query searches the corpus root for all terms at
once (``--json --fixed-strings -e T1 -e T2 …``). ripgrep obeys ``.gitignore``
itself (``--no-require-git``: also outside a git checkout) and
``.rbenchignore`` through ``--ignore-file``; parent, global and
``.git/info/exclude`` ignores are switched off and hidden files are searched,
as :mod:`retrieval_bench.files` does; and every hit outside the corpus's files
is dropped, so ``exact`` never returns a chunk that the chunker left out
(binary files, ignored files, files over the size limit).

Each match line maps to the most specific chunk that spans it
(:meth:`Corpus.chunks_at`). Scoring, for a chunk ``c`` with distinct matched
terms ``T(c)`` and ``L(c)`` matching lines, ``N`` = files in the corpus and
``df(t)`` = corpus files with a match of ``t`` in this search::

    score(c) = Σ_{t ∈ T(c)} log(1 + N / df(t))  +  β · min(L(c) − 1, M)

with β = ``line_bonus`` (0.02) and M = ``max_bonus_lines`` (30). Every term
weighs at least log 2 ≈ 0.69 and the line bonus is at most 0.6, so extra lines
never outweigh one more distinct term; rarer terms count more. A line that
matches a longer term also credits the shorter terms it contains
(``parse_json_line`` credits ``parse``), since ripgrep reports only the
leftmost-first pattern at a position (terms are passed longest first).

Runaway guards: ``--max-count`` matching lines per file (default 100; a term
past that point in a file is not seen), ``--max-filesize``, and lines longer
than ``max_columns`` are ignored (minified or generated text; rg's own
``--max-columns`` has no effect on its JSON output, checked with rg 14.1.0).
Non-UTF-8 paths and lines arrive as base64 ``bytes`` fields and are decoded.
rg exit 1 (no match) gives an empty list; exit 2 (an error, e.g. an unreadable
file) keeps what was found and records the message in :attr:`failures`.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError, SnapshotError, ToolMissingError
from retrieval_bench.files import ALWAYS_IGNORED, DEFAULT_MAX_BYTES
from retrieval_bench.llm.base import LLM
from retrieval_bench.retrieval.issue_query import IssueQuery, IssueReader, defines, may_define
from retrieval_bench.retrieval.query_terms import (
    TERM_EXTRACTORS,
    dedupe,
    identifier_terms,
)
from retrieval_bench.retrieval.rg_memo import (
    RG_MEMO,
    Match,
    parse_matches,
    search_store,
    tree_signature,
)
from retrieval_bench.types import Run

log = logging.getLogger(__name__)

KeywordProvider = Callable[[str], Sequence[str]]
"""Hook for the "llm" rung: question → keywords to grep for."""
DEFAULT_TERMS = "identifiers"


def find_rg(explicit: str | os.PathLike[str] | None = None) -> str:
    """Path of the ripgrep binary: ``explicit``, on PATH, or next to ``sys.executable``."""
    if explicit:
        if Path(explicit).is_file():
            return str(explicit)
        raise ToolMissingError(f"ripgrep binary {explicit} does not exist; fix rg_path")
    found = shutil.which("rg")
    if found:
        return found
    for name in ("rg", "rg.exe"):
        candidate = Path(sys.executable).parent / name
        if candidate.is_file():
            return str(candidate)
    raise ToolMissingError(
        f"ripgrep (rg) is not on PATH nor next to {sys.executable}; "
        "install it with `pip install ripgrep==14.1.0`"
    )


class ExactRetriever(Retriever):
    """ripgrep search mapped back to chunks (see module doc for the score).

    Parameters (:class:`Params`):
        terms: rung, "raw" | "identifiers" | "llm" | "issue".
        case: "ignore" (default), "smart" (rg's rule over all terms together:
            case-sensitive as soon as one term has a capital) or "sensitive".
        max_terms: at most this many terms per query (first in question order).
        max_count: matching lines per file (rg ``--max-count``).
        max_columns: ignore matching lines longer than this many characters.
        max_filesize: rg ``--max-filesize`` in bytes (the chunker's file limit).
        line_bonus, max_bonus_lines: β and M of the score.
        timeout_s: per-query limit for the rg process.
        rg_path: explicit ripgrep binary.
        def_weight, path_weight: the definition and named-file bonuses of "issue".

    Keywords besides: ``keyword_provider`` (the keyword source of the "llm" rung),
    ``llm`` (the model of the default keyword_provider; "llm" only), ``name`` (run name).
    """

    class Params(StageParams):
        terms: str = DEFAULT_TERMS
        case: str = "ignore"
        max_terms: int = 24
        max_count: int = 100
        max_columns: int = 4000
        max_filesize: int = DEFAULT_MAX_BYTES
        line_bonus: float = 0.02
        max_bonus_lines: int = 30
        timeout_s: float = 60.0
        rg_path: str | None = None
        def_weight: float = 1.0
        path_weight: float = 1.0

    params: ExactRetriever.Params
    needs_llm = True  # it takes llm; only the terms="llm" rung calls it (needs_llm_for)

    @classmethod
    def needs_llm_for(cls, params: Mapping[str, Any]) -> bool:
        """Only ``terms: llm`` calls the model: a run of any other rung starts no
        model server."""
        return bool(params.get("terms", DEFAULT_TERMS) == "llm")

    def __init__(
        self,
        params: ExactRetriever.Params | None = None,
        /,
        *,
        keyword_provider: KeywordProvider | None = None,
        name: str = "exact",
        llm: LLM | None = None,
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        terms, case = p.terms, p.case
        if terms == "llm" and keyword_provider is None and llm is not None:
            from retrieval_bench.retrieval.keywords import LLMKeywordProvider

            keyword_provider = LLMKeywordProvider(llm)
        if terms == "llm":
            if keyword_provider is None:
                raise ConfigError(
                    "exact: terms='llm' needs an llm or keyword_provider; or use terms='raw'"
                )
        elif terms not in (*TERM_EXTRACTORS, "issue"):
            raise ConfigError(
                f"exact: terms {terms!r} is not one of "
                f"{', '.join([*TERM_EXTRACTORS, 'llm', 'issue'])}"
            )
        elif keyword_provider is not None:
            raise ConfigError("exact: keyword_provider is only used with terms='llm'")
        if case not in ("ignore", "smart", "sensitive"):
            raise ConfigError(f"exact: case {case!r} must be 'ignore', 'smart' or 'sensitive'")
        super().__init__()
        self.name = name
        self.terms = terms
        self.keyword_provider = keyword_provider
        self.case = case
        self.max_terms, self.max_count = p.max_terms, p.max_count
        self.max_columns, self.max_filesize = p.max_columns, p.max_filesize
        self.line_bonus, self.max_bonus_lines = p.line_bonus, p.max_bonus_lines
        self.timeout_s, self.rg_path = p.timeout_s, p.rg_path
        self.def_weight, self.path_weight = p.def_weight, p.path_weight
        self._reader: IssueReader | None = None
        self._rg: str | None = None
        self._corpus: Corpus | None = None
        self._paths: frozenset[str] = frozenset()
        self._tree = ""
        self.last_terms: dict[str, list[str]] = {}
        """query id → the terms searched in the last :meth:`search` (for drill-down)."""
        self.failures: dict[str, str] = {}
        """query id → ripgrep error of the last :meth:`search`."""
        self.artifacts: dict[str, dict[str, Any]] = {}
        """query id → the terms searched (and why the LLM rung fell back, if it did)."""

    def config(self) -> dict[str, Any]:
        """Parameters that determine the results (for provenance)."""
        keys = ("terms", "case", "max_terms", "max_count", "max_columns", "line_bonus")
        issue = ("def_weight", "path_weight") if self.terms == "issue" else ()
        return {key: getattr(self, key) for key in (*keys, "max_bonus_lines", *issue)}

    def extract_terms(self, question: str) -> list[str]:
        """The terms this rung searches for ``question``, in question order, capped."""
        if self.terms == "llm":
            assert self.keyword_provider is not None
            terms = dedupe([str(t) for t in self.keyword_provider(question)])
            terms = terms or identifier_terms(question)
        elif self.terms == "issue":
            reader = self._reader or IssueReader(())
            terms = list(reader.read(question).terms()) or identifier_terms(question)
        else:
            terms = list(TERM_EXTRACTORS[self.terms](question))
        return terms[: self.max_terms]

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """Remember the corpus; ripgrep needs no index. Fails early if rg is missing."""
        if not Path(corpus.root).is_dir():
            raise SnapshotError(f"exact: corpus root {corpus.root} is not a folder; re-create it")
        self._rg = find_rg(self.rg_path)
        self._corpus = corpus
        self._paths = frozenset(corpus.paths)
        # one signature per corpus: every exact stage of a snapshot searches one tree
        self._tree = corpus.derived(
            ("tree-signature",), lambda: tree_signature(corpus.root, corpus.paths)
        )
        self._reader = IssueReader(corpus.paths)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunks per query (see module doc for the score)."""
        if self._corpus is None:
            raise RuntimeError("ExactRetriever.search called before index()")
        self.last_terms = {}
        self.failures = {}
        self.artifacts = {}
        prefetch = getattr(self.keyword_provider, "prefetch", None)
        if self.terms == "llm" and callable(prefetch):
            prefetch(list(queries.values()))  # one concurrent batch of model calls
        provider_failures = getattr(self.keyword_provider, "failures", {}) or {}
        out: dict[str, dict[str, float]] = {}
        for qid, question in queries.items():
            terms = self.extract_terms(question)
            self.last_terms[qid] = terms
            self.artifacts[qid] = {"terms": terms}
            if question in provider_failures:
                self.artifacts[qid]["keyword_fallback"] = provider_failures[question]
            issue = None
            if self.terms == "issue" and self._reader is not None:
                issue = self._reader.read(question)
                self.artifacts[qid]["named_files"] = issue.paths
            out[qid] = self._search_one(qid, terms, k, issue) if terms and k > 0 else {}
        return Run(self.name, out)

    # -- ripgrep

    def _command(self, terms: Sequence[str]) -> list[str]:
        assert self._rg is not None and self._corpus is not None
        case_flag = {"ignore": "--ignore-case", "smart": "--smart-case"}.get(
            self.case, "--case-sensitive"
        )
        cmd = [
            self._rg,
            "--json",
            "--no-config",
            "--fixed-strings",
            case_flag,
            "--no-require-git",
            "--no-ignore-parent",
            "--no-ignore-global",
            "--no-ignore-exclude",
            "--hidden",
            f"--max-count={self.max_count}",
            f"--max-filesize={self.max_filesize}",
        ]
        for entry in ALWAYS_IGNORED:
            cmd += ["--glob", "!" + entry.rstrip("/")]
        ignore_file = Path(self._corpus.root) / ".rbenchignore"
        if ignore_file.is_file():
            cmd.append(f"--ignore-file={ignore_file}")
        for term in sorted(terms, key=len, reverse=True):  # longest wins at a position
            cmd += ["-e", term]
        return [*cmd, "--", "."]

    def _run_rg(self, qid: str, terms: Sequence[str]) -> list[Match]:
        """ripgrep's matches for ``terms``: remembered by the process, else by the
        workspace's ripgrep cache, else searched (and remembered unless it failed)."""
        assert self._corpus is not None
        key = (self._tree, tuple(self._command(terms)), self.timeout_s)
        found = RG_MEMO.get(key)
        if found is None:
            store = search_store(self._corpus.cache_dir)
            found = store.get(key) if store is not None else None
            if found is None:
                found = parse_matches(self._call_rg(qid, terms))
                if store is not None and qid not in self.failures:
                    store.put(key, found)
            if qid not in self.failures:
                RG_MEMO.put(key, found)
        return found

    def _call_rg(self, qid: str, terms: Sequence[str]) -> list[str]:
        assert self._corpus is not None
        try:
            proc = subprocess.run(
                self._command(terms),
                cwd=self._corpus.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self.failures[qid] = f"ripgrep timed out after {self.timeout_s:g}s"
            log.warning("exact: query %s: %s", qid, self.failures[qid])
            return []
        except OSError as exc:
            raise ToolMissingError(f"ripgrep at {self._rg} cannot run: {exc}") from exc
        if proc.returncode not in (0, 1):
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            self.failures[qid] = f"ripgrep exit {proc.returncode}: " + (err[0] if err else "")
            log.warning("exact: query %s: %s", qid, self.failures[qid])
        return proc.stdout.decode("utf-8", "replace").splitlines()

    def _search_one(
        self, qid: str, terms: Sequence[str], k: int, issue: IssueQuery | None = None
    ) -> dict[str, float]:
        corpus = self._corpus
        assert corpus is not None
        # rg's smart case looks at all patterns together: one capital makes all sensitive.
        insensitive = self.case == "ignore" or (
            self.case == "smart" and all(t == t.lower() for t in terms)
        )
        normed = [(t, t.casefold() if insensitive else t) for t in terms]
        indented_terms = any(t[:1] in (" ", "\t") for t in terms)  # may_define's premise
        file_terms: dict[str, set[str]] = {}
        chunk_terms: dict[str, set[str]] = {}
        chunk_lines: dict[str, set[int]] = {}
        chunk_defs: dict[str, set[str]] = {}
        terms_in: dict[str, set[str]] = {}  # a submatch's text → the terms it contains
        matched_by: dict[tuple[str, ...], frozenset[str]] = {}  # a line's submatches → terms
        known_paths, max_columns, chunk_at = self._paths, self.max_columns, corpus.chunk_at
        for path, line, text, subs in self._run_rg(qid, terms):
            if path not in known_paths or len(text) > max_columns:
                continue
            matched = matched_by.get(subs)
            if matched is None:
                found_terms: set[str] = set()
                for found in subs:
                    hit = terms_in.get(found)
                    if hit is None:
                        text_of = found.casefold() if insensitive else found
                        hit = terms_in[found] = {term for term, norm in normed if norm in text_of}
                    found_terms |= hit
                matched = matched_by[subs] = frozenset(found_terms)
            if not matched:
                continue
            file_terms.setdefault(path, set()).update(matched)
            chunk = chunk_at(path, line)
            if chunk is not None:
                cid = chunk.id
                chunk_terms.setdefault(cid, set()).update(matched)
                chunk_lines.setdefault(cid, set()).add(line)
                if issue is not None and (indented_terms or may_define(text)):
                    chunk_defs.setdefault(cid, set()).update(
                        t for t in matched if defines(text, t, insensitive)
                    )
        n_files = max(len(self._paths), 1)
        df = Counter(t for ts in file_terms.values() for t in ts)
        source = issue.terms() if issue is not None else {}
        weight = {t: math.log(1.0 + n_files / d) * source.get(t, 1.0) for t, d in df.items()}
        bonus = self.def_weight if issue is not None else 0.0
        scores = {
            cid: sum(weight[t] * (1.0 + bonus * (t in chunk_defs.get(cid, ()))) for t in sorted(ts))
            + self.line_bonus * min(len(chunk_lines[cid]) - 1, self.max_bonus_lines)
            for cid, ts in chunk_terms.items()
        }
        if issue is not None and self.path_weight > 0:
            top = max(weight.values(), default=1.0)
            for path, w in issue.paths.items():
                ids = [c.id for c in corpus.chunks_of(path)]
                if ids:
                    best = max(ids, key=lambda c: (scores.get(c, 0.0), c == ids[0]))
                    scores[best] = scores.get(best, 0.0) + self.path_weight * w * top
        return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k])

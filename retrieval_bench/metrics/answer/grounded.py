"""``grounded_refs``: are the files, line ranges and symbols an answer cites real?

File references in the answer are extracted and checked against the
repository: grounded claims for code (docs/metrics.md#grounded-references,
docs/stages.md#answerer). Deterministic, no LLM:
the references come from
:func:`retrieval_bench.answering.references.extract_references`, and each is
checked against the repository snapshot — the folder in ``sample.meta["repo"]``
(or the metric's ``root=``), walked with the project's ignore rules
(:func:`retrieval_bench.files.iter_source_files`), so ignored files do not count:

* **path** — resolves to at least one repository file by trailing path
  components (:meth:`PathIndex.match`; ``auth.py`` → ``src/x/auth.py``). A name
  matching several files (``__init__.py``) counts as found; the range and
  symbol checks then pass if they pass in any of the candidates.
* **line range** — ``1 <= start <= end <= line count`` of the file (a line is
  a ``\\n``-terminated run; a final line without ``\\n`` counts). Binary files
  have no lines.
* **symbol** — *mentioned as code* in the cited file, or anywhere in the
  repository when no file is cited. The rule is lexical and language-agnostic:
  the name occurs after a definition keyword (``def``, ``class``, ``function``,
  ``func``, ``fn``, ``struct``, ``interface``, ``trait``, ``enum``, ``type``,
  ``impl``, ``mod``, ``const``, ``let``, ``var`` …, Go receivers allowed), as an
  assignment or field target (``name =``, ``name :=``, ``name:``), or before
  ``(`` (a definition or a call). For ``Qualifier.name`` the last part must pass
  that test and every qualifier must occur as a word in the same file or as a
  folder/file name of the repository; a dotted module path
  (``shopapi.auth.tokens``) is also found when such a module file exists. This
  catches invented names cheaply; it cannot tell a definition from a use.

Value = grounded references / references. A reference is grounded when every
part it names passes. Details: ``n_refs``, ``n_grounded``, ``n_paths``,
``n_paths_found``, ``n_paths_ambiguous``, ``n_ranges``, ``n_ranges_valid``,
``n_symbols``, ``n_symbols_found`` and, when ``meta["gold_files"]`` is given,
``cited_precision`` (cited files that are gold; an unresolvable path is a miss,
several candidates count as one citation that hits if any is gold) and
``cited_recall`` (gold files cited).

An answer with no references scores **1.0** ("nothing to check") by default:
the metric measures whether what is cited is real (a precision), and an answer
that cites nothing has cited nothing false. Making it missing would drop such
answers from the mean — a system that never cites would have no score at all,
and two systems would be averaged over different questions. Whether an answer
cites at all is what ``cited_recall`` and ``n_refs`` show. Pass
``require_refs=True`` to make such answers missing instead (error "no code
references in the answer"). A missing or unreadable repository is a missing
value whose error names the path.

The repository's file list, line counts and names are read once per root and
kept in a small LRU cache, so a batch of answers over one snapshot walks it once.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import field_validator

from retrieval_bench.answering.paths import PathIndex, PathMatch, normalise_path
from retrieval_bench.answering.references import CodeReference, extract_references, symbol_parts
from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.errors import ConfigError
from retrieval_bench.files import WalkReport, iter_source_files

_NAME = r"[A-Za-z_$][\w$]*"
_DEFINITION_KEYWORDS = (
    "def|class|function|func|fn|struct|interface|trait|enum|type|impl|mod|module|record|"
    "const|let|var|val|object|protocol|typedef|macro_rules!"
)
_DEFINITION_FORMS = (
    re.compile(rf"\b(?:{_DEFINITION_KEYWORDS})\s+(?:\([^)\n]*\)\s*)?({_NAME})"),
    re.compile(rf"(?<![\w$])({_NAME})[\"']?\s*(?::=|=(?![=>])|:(?!:))"),
    re.compile(rf"(?<![\w$])({_NAME})\s*\("),
)
_WORD = re.compile(_NAME)
_NO_LINES_REASONS = ("binary", "not a regular file", "unreadable")


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


@dataclass(frozen=True)
class FileFacts:
    """What the checks need of one file."""

    line_count: int | None
    """None for binary or unreadable files."""
    defined: frozenset[str] = frozenset()
    """Names mentioned as code (see the module docstring)."""
    words: frozenset[str] = frozenset()


def file_facts(text: str) -> FileFacts:
    defined = {m.group(1) for form in _DEFINITION_FORMS for m in form.finditer(text)}
    return FileFacts(_line_count(text), frozenset(defined), frozenset(_WORD.findall(text)))


@dataclass(frozen=True)
class RepoIndex:
    """A snapshot's files (ignore rules applied), line counts and names."""

    root: Path
    paths: PathIndex
    files: Mapping[str, FileFacts]
    path_words: frozenset[str]
    """Folder names and file stems (``shopapi``, ``auth``, ``tokens``)."""
    modules: frozenset[str]
    """Dotted module names by every tail: ``tokens``, ``auth.tokens``, ``shopapi.auth.tokens``."""

    @classmethod
    def load(
        cls, root: Path, extra_ignore: tuple[str, ...] = (), include: tuple[str, ...] = ()
    ) -> RepoIndex:
        report = WalkReport()
        walk = iter_source_files(root, extra_ignore=extra_ignore, include=include, report=report)
        files = {f.path: file_facts(f.text) for f in walk}
        for rel, reason in report.skipped.items():
            files[rel] = _skipped_facts(root / rel, reason)
        path_words: set[str] = set()
        modules: set[str] = set()
        for rel in files:
            parts = list(PurePosixPath(rel).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            path_words.update(parts)
            modules.update(".".join(parts[i:]) for i in range(len(parts)))
        return cls(root, PathIndex(files), files, frozenset(path_words), frozenset(modules))


def _skipped_facts(full: Path, reason: str) -> FileFacts:
    """Files the walker does not chunk still exist: empty (0 lines), too large (counted)."""
    if reason.startswith(_NO_LINES_REASONS):
        return FileFacts(None)
    try:
        return FileFacts(_line_count(full.read_bytes().decode("utf-8", errors="replace")))
    except OSError:
        return FileFacts(None)


# --------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class ReferenceCheck:
    """The verdict on one reference; ``None`` for a part the reference does not name."""

    ref: CodeReference
    match: PathMatch | None
    path_found: bool | None
    range_valid: bool | None
    symbol_found: bool | None
    problem: str | None

    @property
    def grounded(self) -> bool:
        return self.problem is None


def symbol_defined(symbol: str, scope: Iterable[FileFacts], repo: RepoIndex) -> bool:
    """The lexical rule of the module docstring, over the files in ``scope``."""
    parts = symbol_parts(symbol)
    if not parts:
        return False
    if len(parts) > 1 and ".".join(parts) in repo.modules:
        return True
    *qualifiers, name = parts
    return any(
        name in facts.defined and all(q in facts.words or q in repo.path_words for q in qualifiers)
        for facts in scope
    )


def _range_problem(ref: CodeReference, candidates: Sequence[str], repo: RepoIndex) -> str | None:
    start = ref.start_line or 0
    end = ref.end_line if ref.end_line is not None else start
    if start < 1 or end < start:
        return f"invalid line range {start}-{end}"
    counts = [repo.files[c].line_count for c in candidates]
    if any(n is not None and end <= n for n in counts):
        return None
    known = [f"{c} has {n} lines" for c, n in zip(candidates, counts, strict=True) if n is not None]
    return f"line {end} is past the end ({'; '.join(known)})" if known else "not a text file"


def check_reference(ref: CodeReference, repo: RepoIndex) -> ReferenceCheck:
    """Check one reference's path, line range and symbol against ``repo``."""
    match = repo.paths.match(ref.path) if ref.path is not None else None
    path_found = None if match is None else match.found
    candidates = match.candidates if match is not None else ()
    problems: list[str] = []
    if path_found is False:
        problems.append("no such file in the repository")
    range_valid = None
    if ref.start_line is not None:
        why = _range_problem(ref, candidates, repo) if path_found else "file not found"
        range_valid = why is None
        if why is not None and path_found:
            problems.append(why)
    symbol_found = None
    if ref.symbol is not None:
        scope = [repo.files[c] for c in candidates] if match is not None else repo.files.values()
        symbol_found = symbol_defined(ref.symbol, scope, repo)
        if not symbol_found and path_found is not False:
            where = "the cited file" if match is not None else "the repository"
            problems.append(f"`{ref.symbol}` not found in {where}")
    problem = "; ".join(problems) or None
    return ReferenceCheck(ref, match, path_found, range_valid, symbol_found, problem)


def citation_scores(
    checks: Sequence[ReferenceCheck], gold_files: Collection[str]
) -> dict[str, float | None]:
    """Precision and recall of the cited files against the gold files."""
    gold = {normalise_path(g) for g in gold_files}
    citations: dict[object, frozenset[str]] = {}
    for c in checks:
        if c.match is not None:
            key = frozenset(c.match.candidates) or ("missing", normalise_path(c.match.query))
            citations.setdefault(key, frozenset(c.match.candidates))
    hits = sum(1 for files in citations.values() if files & gold)
    covered = gold & frozenset().union(*citations.values())
    return {
        "cited_precision": hits / len(citations) if citations else None,
        "cited_recall": len(covered) / len(gold) if gold else None,
    }


def _summary(checks: Sequence[ReferenceCheck]) -> dict[str, float | None]:
    def count(pred: Callable[[ReferenceCheck], object]) -> int:
        return sum(1 for c in checks if pred(c))

    return {
        "n_refs": len(checks),
        "n_grounded": count(lambda c: c.grounded),
        "n_paths": count(lambda c: c.path_found is not None),
        "n_paths_found": count(lambda c: c.path_found),
        "n_paths_ambiguous": count(lambda c: c.match is not None and c.match.ambiguous),
        "n_ranges": count(lambda c: c.range_valid is not None),
        "n_ranges_valid": count(lambda c: c.range_valid),
        "n_symbols": count(lambda c: c.symbol_found is not None),
        "n_symbols_found": count(lambda c: c.symbol_found),
    }


# --------------------------------------------------------------------------- metric
class GroundedReferences(MetricBase):
    """Share of the answer's code references (paths, line ranges, symbols) that exist.

    Parameters (``Params``):
        root: the snapshot folder, used when a sample has no ``meta["repo"]``.
        require_refs: an answer without references is missing (not 1.0).
        max_reasons: how many ungrounded references the reason lists.
        cache_size: how many repositories' indexes to keep.
        extra_ignore: gitignore-style patterns to skip, as in the benchmark's chunking.
        include: gitignore-style globs; when given, only the files they match count.

    ``name`` (keyword): the metric's label in results.
    """

    description = "share of cited files, line ranges and symbols that exist in the repository"

    class Params(StageParams):
        root: str | None = None
        require_refs: bool = False
        max_reasons: int = 5
        cache_size: int = 8
        extra_ignore: tuple[str, ...] = ()
        include: tuple[str, ...] = ()

        @field_validator("root", mode="before")
        @classmethod
        def _path_as_text(cls, value: object) -> object:
            """A ``Path`` (any ``os.PathLike``) is accepted as its text."""
            return os.fspath(value) if isinstance(value, os.PathLike) else value

    params: GroundedReferences.Params

    def __init__(
        self,
        params: GroundedReferences.Params | None = None,
        /,
        *,
        name: str = "grounded_refs",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.name = name
        root = p.root
        if root is not None and not Path(root).is_dir():
            raise ConfigError(f"{name}: root {root!r} is not a folder; pass the snapshot path")
        if p.max_reasons < 0 or p.cache_size < 1:
            raise ValueError(f"{name}: max_reasons must be >= 0 and cache_size >= 1")
        self.root = Path(root) if root is not None else None
        self.require_refs = p.require_refs
        self.max_reasons = p.max_reasons
        self.cache_size = p.cache_size
        self.extra_ignore = p.extra_ignore
        self.include = p.include
        self.repo_walks = 0
        """How many times a repository was walked (the rest were cache hits)."""
        self._cache: OrderedDict[str, RepoIndex] = OrderedDict()
        self._lock = threading.Lock()

    def repo_index(self, root: Path) -> RepoIndex:
        """The cached index of ``root`` (walked on first use)."""
        key = str(root.resolve())
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            index = RepoIndex.load(Path(key), self.extra_ignore, self.include)
            self.repo_walks += 1
            self._cache[key] = index
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return index

    def _root_of(self, sample: Sample) -> Path | str:
        """The snapshot folder, or an error message."""
        repo = sample.meta.get("repo") if sample.meta else None
        if repo is None:
            if self.root is None:
                return f"{self.name}: no repository; set sample.meta['repo'] or pass root="
            return self.root
        if not isinstance(repo, str | os.PathLike):
            return f"{self.name}: meta['repo'] must be a folder path, got {type(repo).__name__}"
        path = Path(repo)
        if not path.is_dir():
            return f"{self.name}: repository folder {str(path)!r} does not exist or is not a folder"
        return path

    def score(self, sample: Sample) -> Score:
        if not isinstance(sample.prediction, str):
            raise TypeError(f"{self.name}: prediction must be a string")
        root = self._root_of(sample)
        if isinstance(root, str):
            return Score.missing(root)
        refs = extract_references(sample.prediction)
        gold = sample.meta.get("gold_files") if sample.meta else None
        if gold is not None and (isinstance(gold, str) or not isinstance(gold, Collection)):
            raise TypeError(f"{self.name}: meta['gold_files'] must be a list of paths")
        if not refs and self.require_refs:
            return Score.missing(f"{self.name}: no code references in the answer")
        checks = [check_reference(r, self.repo_index(root)) for r in refs] if refs else []
        details = _summary(checks)
        if gold is not None:
            details.update(citation_scores(checks, gold))
        if not checks:
            return Score(1.0, reason="nothing to check: no code references", details=details)
        grounded = sum(1 for c in checks if c.grounded)
        return Score(grounded / len(checks), reason=self._reason(checks), details=details)

    def _reason(self, checks: Sequence[ReferenceCheck]) -> str:
        bad = [c for c in checks if not c.grounded]
        head = f"{len(checks) - len(bad)}/{len(checks)} references grounded"
        if not bad:
            return head
        shown = "; ".join(f"{c.ref.describe()} ({c.problem})" for c in bad[: self.max_reasons])
        more = f"; and {len(bad) - self.max_reasons} more" if len(bad) > self.max_reasons else ""
        return f"{head}; ungrounded: {shown}{more}"

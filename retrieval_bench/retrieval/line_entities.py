"""Per line of a Python file, the definition holding it, named as gold functions are
(docs/metrics.md#function-and-module-level).

Each line belongs to the innermost ``def``/``class`` holding it, named ``path:Class.method``
and cut after the first function (:mod:`retrieval_bench.datasets.gold_functions`): a
function nested in a function is part of its outer one. The function measures map a
chunk's lines to the definitions it stands for with it
(:mod:`retrieval_bench.metrics.retrieval.entities`), and the ``similar-functions``
history signal maps a changed name to an entity of the snapshot
(:mod:`retrieval_bench.retrieval.history_functions`). Definitions are parsed
(tree-sitter, the grammar the ``ast`` chunker uses) once per file content and process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.gold_functions import Definition, content_key, definitions_cached
from retrieval_bench.retrieval.definitions_cache import DefinitionsCache
from retrieval_bench.retrieval.file_bm25 import file_source

_LINES_KEY = ("line-entities",)


def line_entities(corpus: Corpus, path: str) -> Sequence[str | None]:
    """Per line of ``path`` (index 0 = line 1), the entity of the innermost definition
    holding it (None: module-level code); empty for a file that is not Python or
    cannot be read. Computed once per corpus and file."""
    known: dict[str, Sequence[str | None]] = corpus.derived(_LINES_KEY, dict)
    found = known.get(path)
    if found is None:
        found = known[path] = _line_entities(corpus, path)
    return found


_LINES: dict[tuple[str, bytes], tuple[str | None, ...]] = {}
_LINES_LIMIT = 100_000
"""Per-line entities by (path, hash of the file's text), for the process: the same file
in another snapshot (or corpus) is read once."""


def _line_entities(corpus: Corpus, path: str) -> Sequence[str | None]:
    if not path.endswith(".py"):
        return ()
    text, sha = file_source(corpus, path)  # the text the code graph reads too, once
    if sha is None:  # not read by the walker's reader: its lines may not be the chunks'
        return ()
    key = content_key(text)
    known = _LINES.get((path, key))
    if known is not None:
        return known
    store = DefinitionsCache.for_folder(corpus.definitions_dir)
    found = entities_by_line(path, text, definitions_cached(text, key, store))
    if len(_LINES) >= _LINES_LIMIT:
        _LINES.clear()
    _LINES[(path, key)] = found
    return found


def entities_by_line(
    path: str, text: str, definitions: Iterable[Definition]
) -> tuple[str | None, ...]:
    """Per line of ``text`` (the file ``path``), the entity of the innermost of
    ``definitions`` holding it (None: module-level code)."""
    # outer definitions first, so an inner one overwrites their lines
    ordered = sorted(definitions, key=lambda d: (d.start, -d.end))
    lines: list[str | None] = [None] * (text.count("\n") + 1)
    for d in ordered:
        entity, end = f"{path}:{d.entity or d.name}", min(d.end, len(lines))
        lines[d.start - 1 : end] = [entity] * (end - d.start + 1)
    return tuple(lines)

"""Which functions a chunk stands for, and the function and module rankings of a run
(docs/metrics.md#function-and-module-level).

A chunk stands for every definition that owns one of its lines: each line of a
Python file belongs to the innermost ``def``/``class`` holding it, named as gold
functions are (``path:Class.method``, cut after the first function: see
:mod:`retrieval_bench.datasets.gold_functions`), and a chunk stands for its own
symbol first, then for the definitions of its lines in line order. So a file
that fits one chunk (the ``ast`` chunker gives it no symbol) stands for each of
its functions and classes, and a class that fits one chunk for the class and
each of its methods — the gold ``a.py:handle_payment`` of a two-function file
is found when the file's chunk is. Lines outside every definition (imports,
module constants) name nothing. A ``collapsed`` chunk (a class outline whose
method bodies are hidden and chunked on their own) stands for its symbol only,
and a chunk of a file that is not Python, or whose text cannot be read, too.

Definitions are parsed (tree-sitter, the grammar the ``ast`` chunker uses) only
for the files a ranking reaches, once per file content and process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.line_entities import line_entities
from retrieval_bench.runs.file_ids import entity_of
from retrieval_bench.types import Chunk, Example, module_of

_CHUNKS_KEY = ("chunk-entities",)


def chunk_entities(chunk: Chunk, corpus: Corpus) -> tuple[str, ...]:
    """The functions ``chunk`` stands for (module doc), its own symbol first."""
    known: dict[str, tuple[str, ...]] = corpus.derived(_CHUNKS_KEY, dict)
    found = known.get(chunk.id)
    if found is None:
        found = known[chunk.id] = _chunk_entities(chunk, corpus)
    return found


def _chunk_entities(chunk: Chunk, corpus: Corpus) -> tuple[str, ...]:
    out: dict[str, None] = {}
    if chunk.symbol:
        out[f"{chunk.path}:{chunk.symbol}"] = None
    if chunk.kind != "collapsed":
        lines = line_entities(corpus, chunk.path)
        for entity in lines[chunk.start_line - 1 : chunk.end_line]:
            if entity is not None:
                out.setdefault(entity)
    return tuple(out)


def entity_ranking(ids: Sequence[str], corpus: Corpus, modules: bool = False) -> list[str]:
    """Ranked chunk ids → ranked functions ``path:Class.method`` (each chunk's
    :func:`chunk_entities`; a function ranks at its best chunk; an ``entity:`` id is
    its entity), or with ``modules`` their :func:`module_ranking`."""
    out: dict[str, None] = {}
    by_id = corpus.by_id
    for cid in ids:
        named = entity_of(cid)
        if named is not None:
            out.setdefault(named)
            continue
        chunk = by_id.get(cid)
        for entity in chunk_entities(chunk, corpus) if chunk is not None else ():
            out.setdefault(entity)
    return module_ranking(out) if modules else list(out)


def module_ranking(functions: Iterable[str]) -> list[str]:
    """Ranked functions → their top-level names ``path:Class``, each at its best function."""
    return list(dict.fromkeys(map(module_of, functions)))


def unmapped_functions(
    example: Example, corpus: Corpus, gold: Sequence[str] | None = None
) -> list[str]:
    """The gold functions of ``example`` (or ``gold``, the ones a convention reads) that
    no chunk of ``corpus`` stands for: no chunk stage can rank them (their file is
    missing or not Python, or the chunker left their lines out); only a stage naming
    entities itself can."""
    wanted = example.gold_functions if gold is None else gold
    return [g for g in wanted if g not in _file_entities(corpus, g.rpartition(":")[0])]


def _file_entities(corpus: Corpus, path: str) -> frozenset[str]:
    """Every function some chunk of ``path`` stands for, once per corpus and file."""
    known: dict[str, frozenset[str]] = corpus.derived(("file-entities",), dict)
    found = known.get(path)
    if found is None:
        chunks = corpus.chunks_of(path)
        found = known[path] = frozenset(e for c in chunks for e in chunk_entities(c, corpus))
    return found

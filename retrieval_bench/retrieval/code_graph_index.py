"""The code graph of one snapshot's Python files: who imports or calls what, and
who defines which name (docs/stages.md#code-structure).

After LocAgent's code graph (Chen et al. 2025, "LocAgent: Graph-Guided LLM
Agents for Code Localization"), reduced to what a reranker needs without an
LLM: files as nodes, *import* and *invoke* edges between them, and a symbol
table for the *contain* relation (file → the names it defines).

Every ``.py`` file of the corpus is read once from its tree-sitter tree (text
from the working tree, its chunks joined when the tree is gone; a file that does
not parse is skipped and listed in :attr:`CodeGraphIndex.unparsed`; facts are
remembered by content, :mod:`~retrieval_bench.retrieval.code_facts`, so a
snapshot of one repository's history parses only the files no earlier snapshot
had, and a file the ``ast`` chunker parsed is not parsed again). Per file:

* **definitions** — every ``def``/``async def``/``class`` name (any depth, so
  methods count) and every module-level assignment target (``NAME = ...``,
  ``NAME: T = ...``, also inside module-level ``if``/``try``/``with``);
* **imports** — ``import a.b``, ``from a.b import c`` (also relative:
  ``from ..x import y``), at any depth;
* **uses** — names called (``f()``) and attribute names (``obj.name``), minus
  dunders, builtins, the file's own definitions and the names its imports bind.

Modules map to files by package roots: a file's module name starts at the
topmost folder of its unbroken chain of ``__init__.py`` folders, so
``src/pkg/sub/mod.py`` is ``pkg.sub.mod`` (``src/`` layouts) and a file outside
any package is its bare stem (an empty ``__init__.py``, which has no chunks,
counts when the working tree has it); the full dotted path
(``src.pkg.sub.mod``) is tried second, any dotted tail of two or more parts
(``sub.mod``) third. Relative imports resolve against the importing file's folder.
More than :data:`MAX_AMBIGUOUS` equally good files resolve to none (the same
folder as the importer wins a tie).

:meth:`CodeGraphIndex.edges` gives the out-edges of a file, weighted:

* ``import a.b`` → the file of ``a.b``, weight 1;
* ``from a.b import c`` → ``a/b/c.py`` when ``c`` is a module, else the file
  that *defines* ``c``, following re-exports (``a/b/__init__.py`` importing
  ``c`` from ``a/b/impl.py``) up to :data:`MAX_HOPS` hops, else ``a/b``'s
  file; weight 1 (shared among ambiguous files: 1/n each);
* ``m.name`` with ``m`` an imported module → the file defining ``name``
  reached from ``m``, weight 1 (these three are :attr:`Edges.imports`);
* another used name ``n`` → each of the D(n) files defining it (other than
  the user), weight ``1/|D(n)|``: a name defined once is a sure edge, one
  defined in ten files a weak one (:attr:`Edges.uses`).

The symbol table :attr:`CodeGraphIndex.definers` (name → defining files) also
answers which files define a symbol an issue names, with rarity
:meth:`CodeGraphIndex.idf` = log(1 + N/df) / log(1 + N) ∈ (0, 1] (N parsed
files, df defining files). :func:`graph_index` builds one index per corpus
object.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.code_facts import (
    FactsStore,
    FileFacts,
    ImportRef,
    cached_facts,
    prefetch_facts,
)
from retrieval_bench.retrieval.file_bm25 import file_source

MAX_AMBIGUOUS = 3
"""A module or re-export resolving to more files than this resolves to none."""
MAX_HOPS = 3
"""Re-export hops followed to the file that defines an imported name."""


@dataclass
class Edges:
    """Out-edges of one file: target file → weight in (0, 1], by kind."""

    imports: dict[str, float] = field(default_factory=dict)
    """Imported modules and imported names' defining files (also ``module.name``)."""
    uses: dict[str, float] = field(default_factory=dict)
    """Definers of other called or attribute names, 1/|D(n)| each."""

    def link(self, kind: str, source: str, files: list[str]) -> None:
        """Weight 1 shared among ``files`` (1/n each), kept at its maximum; no self-edge."""
        out = self.imports if kind == "imports" else self.uses
        others = [f for f in files if f != source]
        for f in others:
            out[f] = max(out.get(f, 0.0), 1.0 / len(others))


def module_names(path: str, package_dirs: set[str]) -> tuple[str, str]:
    """(package-rooted module name, full dotted path) of a ``.py`` file (module doc)."""
    folders = path.split("/")[:-1]
    stem = path.rsplit("/", 1)[-1][: -len(".py")]
    parts = folders if stem == "__init__" else [*folders, stem]
    start = len(folders)
    while start > 0 and "/".join(folders[:start]) in package_dirs:
        start -= 1
    return ".".join(parts[start:]), ".".join(parts)


def package_folders(corpus: Corpus, py: Iterable[str]) -> set[str]:
    """Folders holding an ``__init__.py``: in the corpus, or in the working tree (an
    empty ``__init__.py`` has no chunks, so the corpus alone misses it)."""
    folders: set[str] = set()
    for path in py:
        parts = path.split("/")[:-1]
        folders.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    root = Path(corpus.root)
    return {
        d
        for d in folders
        if corpus.chunks_of(f"{d}/__init__.py") or (root / d / "__init__.py").is_file()
    }


class CodeGraphIndex:
    """Definitions, imports and uses of every Python file of one corpus (module doc)."""

    def __init__(self, corpus: Corpus, store: FactsStore | None = None) -> None:
        self.paths = frozenset(corpus.paths)
        self.facts: dict[str, FileFacts] = {}
        self.unparsed: list[str] = []
        py = [p for p in corpus.paths if p.endswith(".py")]
        sources = [file_source(corpus, path) for path in py]
        prefetch_facts(sources, store)
        for path, (text, sha) in zip(py, sources, strict=True):
            facts = cached_facts(text, store, sha)
            if facts is None:
                self.unparsed.append(path)
            else:
                self.facts[path] = facts
        package_dirs = package_folders(corpus, py)
        self._modules: dict[str, list[str]] = {}
        self._full_modules: dict[str, list[str]] = {}
        self._suffixes: dict[str, list[str]] = {}
        for path in py:
            name, full = module_names(path, package_dirs)
            self._modules.setdefault(name, []).append(path)
            self._full_modules.setdefault(full, []).append(path)
            parts = full.split(".")
            for n in range(2, len(parts)):
                self._suffixes.setdefault(".".join(parts[-n:]), []).append(path)
        found: dict[str, list[str]] = {}
        for path, facts in self.facts.items():
            for name in facts.defines:
                found.setdefault(name, []).append(path)
        self.definers: dict[str, tuple[str, ...]] = {
            n: (p[0],) if len(p) == 1 else tuple(sorted(p)) for n, p in found.items()
        }
        self._edges: dict[str, Edges] = {}

    # -- modules -------------------------------------------------------------------
    def _at(self, parts: list[str]) -> list[str]:
        stem = "/".join(parts)
        return [p for p in (stem + ".py", stem + "/__init__.py") if p in self.paths and stem]

    def module_files(self, importer: str, level: int, module: str) -> list[str]:
        """Files of ``module`` imported from ``importer`` with ``level`` leading dots."""
        tail = module.split(".") if module else []
        if level:
            folder = importer.split("/")[:-1]
            if level - 1 > len(folder):
                return []
            base = folder[: len(folder) - (level - 1)]
            return self._at(base + tail) if tail else self._at(base)
        found = (
            self._modules.get(module)
            or self._full_modules.get(module)
            or self._suffixes.get(module)
            or []
        )
        if len(found) > 1:
            here = importer.rsplit("/", 1)[0] if "/" in importer else ""
            local = [p for p in found if (p.rsplit("/", 1)[0] if "/" in p else "") == here]
            found = local or found
        return sorted(found) if len(found) <= MAX_AMBIGUOUS else []

    def definer_via(self, files: Iterable[str], name: str, hops: int = MAX_HOPS) -> list[str]:
        """Files defining ``name`` as seen from the modules ``files``: a module that
        defines it, else where its import of ``name`` leads (re-exports)."""
        found: list[str] = []
        for path in files:
            facts = self.facts.get(path)
            if facts is None:
                continue
            if name in facts.defines:
                found.append(path)
                continue
            if hops <= 0:
                continue
            for ref in facts.imports:
                if ref.alias == name and ref.name not in (None, "*"):
                    found += self._resolve(path, ref, hops - 1)[0]
        found = sorted(set(found))
        return found if len(found) <= MAX_AMBIGUOUS else []

    def _resolve(
        self, importer: str, ref: ImportRef, hops: int = MAX_HOPS
    ) -> tuple[list[str], bool]:
        """The files one imported binding stands for (module doc), and whether the
        binding is a module (so ``alias.attr`` reads a name of those files)."""
        if ref.name is None or ref.name == "*":
            files = self.module_files(importer, ref.level, ref.module)
            # ``import a.b`` binds ``a``, not the module ``a.b``; ``import a.b as m`` binds it
            plain = ref.alias == ref.module.split(".", 1)[0] and "." in ref.module
            return files, ref.name is None and not plain
        sub = ".".join(p for p in (ref.module, ref.name) if p)
        as_module = self.module_files(importer, ref.level, sub)
        if as_module:
            return as_module, True
        module = self.module_files(importer, ref.level, ref.module)
        return self.definer_via(module, ref.name, hops) or module, False

    # -- edges ---------------------------------------------------------------------
    def edges(self, path: str) -> Edges:
        """Out-edges of ``path`` (module doc); cached per file."""
        cached = self._edges.get(path)
        if cached is not None:
            return cached
        edges = Edges()
        facts = self.facts.get(path)
        if facts is not None:
            modules: dict[str, list[str]] = {}
            for ref in facts.imports:
                files, is_module = self._resolve(path, ref)
                edges.link("imports", path, files)
                if files and is_module:
                    modules[ref.alias] = files
            for local, attr in sorted(facts.module_attrs):
                if local in modules:
                    edges.link("imports", path, self.definer_via(modules[local], attr))
            for name in sorted(facts.uses):
                edges.link("uses", path, list(self.definers.get(name, ())))
        self._edges[path] = edges
        return edges

    # -- symbols -------------------------------------------------------------------
    def idf(self, name: str) -> float:
        """Rarity of a defined name: log(1 + N/df) / log(1 + N); 0 when undefined."""
        df = len(self.definers.get(name, ()))
        n = len(self.facts)
        return math.log(1 + n / df) / math.log(1 + n) if df and n else 0.0


_INDEXES: dict[int, tuple[weakref.ref[Corpus], CodeGraphIndex]] = {}


def graph_index(corpus: Corpus, store: FactsStore | None = None) -> CodeGraphIndex:
    """The index of ``corpus``, built once per corpus object and dropped with it
    (``store``: the on-disk facts cache its files' facts are read from and written to).

    Keyed by the corpus itself (its identity, checked through a weak reference),
    so two snapshots handled in one process never share an index, and a worker
    process builds its own.
    """
    key = id(corpus)
    hit = _INDEXES.get(key)
    if hit is not None and hit[0]() is corpus:
        return hit[1]
    index = CodeGraphIndex(corpus, store)
    _INDEXES[key] = (weakref.ref(corpus), index)
    weakref.finalize(corpus, _INDEXES.pop, key, None)
    return index

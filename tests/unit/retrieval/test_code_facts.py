"""Code-graph facts (docs/stages.md#code-structure): :func:`parse_facts` equals an
independent :func:`ast.walk` over the file, and :func:`cached_facts` (tree-sitter,
retrieval_bench/chunking/tree_facts.py) equals both, remembered in the process and
on disk. Rule-by-rule checks of the tree-sitter facts are in test_tree_facts.py."""

from __future__ import annotations

import ast
import builtins
import warnings
from pathlib import Path

import pytest

from retrieval_bench.retrieval import code_facts
from retrieval_bench.retrieval.code_facts import FileFacts, ImportRef, parse_facts

_BUILTINS = frozenset(dir(builtins))


def walk_facts(source: str) -> FileFacts | None:
    """The facts as :func:`ast.walk` over the whole file finds them (the definition
    :func:`parse_facts` and the tree-sitter facts must equal)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    facts = FileFacts(defines=set(code_facts._module_level(tree.body)))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            facts.defines.add(node.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                alias = a.asname or a.name.split(".", 1)[0]
                facts.imports.append(ImportRef(0, a.name, None, alias))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                facts.imports.append(
                    ImportRef(node.level, node.module or "", a.name, a.asname or a.name)
                )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            facts.uses.add(node.func.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            facts.uses.add(node.attr)
            if isinstance(node.value, ast.Name):
                facts.module_attrs.add((node.value.id, node.attr))
    bound = {r.alias for r in facts.imports}
    facts.uses = {
        n
        for n in facts.uses
        if not (n.startswith("__") or n in _BUILTINS or n in facts.defines or n in bound)
    }
    return facts


TRICKY = {
    "docstring with column-0 lines": '"""Module.\n\ndef not_code():\nimport nope\n"""\nimport os\n',
    "closing bracket at column 0": "X = dict(\n    a=os.path.join('a'),\n)\nY = 1\n",
    "decorators": "@one\n@two(3)\ndef f():\n    import json\n    return g()\nclass C:\n    pass\n",
    "else/except at column 0": (
        "try:\n    import a\nexcept ImportError:\n    a = None\nelse:\n    b = 1\n"
        "finally:\n    c = 2\nif x:\n    pass\nelif y:\n    import z\n"
    ),
    "imports at several depths": (
        "def f():\n    from .deep import x as y\n    if q:\n        import deeper\n"
        "import top\nclass K:\n    from . import mid\nfrom top import y\n"
    ),
    "backslash continuation": "x = 1 + \\\n2\nimport os\n",
    "string spanning a cut": "s = '''\nimport fake\n'''\nt = s.upper()\n",
    "a syntax error": "def ok():\n    pass\ndef bad(:\n    pass\nimport os\n",
    "python 2": "print 'hello'\nimport os\n",
    "no final newline": "import os\nos.getcwd()",
    "blank and comments": "\n\n# c\nimport a\n\n# d\n\nb = a.c\n",
    "empty": "",
    "crlf": "import os\r\nx = os.sep\r\n",
    "form feed": "import os\n\x0cdef f():\n    return os.sep\n",
    "redefined alias": "import a as m\nimport b as m\nm.f()\ndef g():\n    import c as m\n",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_cached_facts_equal_the_ast_walk(name: str) -> None:
    source = TRICKY[name]
    assert code_facts.cached_facts(source) == walk_facts(source) == parse_facts(source)


def test_imports_keep_the_breadth_first_order() -> None:
    facts = code_facts.cached_facts(TRICKY["imports at several depths"])
    assert facts is not None
    assert [r.alias for r in facts.imports] == ["top", "y", "y", "mid", "deeper"]


def test_the_projects_own_files() -> None:
    root = Path(code_facts.__file__).resolve().parents[1]
    files = sorted(root.rglob("*.py"))
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert code_facts.cached_facts(text) == walk_facts(text), path


def test_the_on_disk_cache_gives_back_what_was_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_bench.retrieval.facts_cache import FactsCache

    sources = [*TRICKY.values(), Path(code_facts.__file__).read_text(encoding="utf-8")]
    cache = FactsCache.in_dir(tmp_path)
    assert cache is not None
    for source in sources:
        assert code_facts.cached_facts(source + "\n# one", cache) == walk_facts(source + "\n# one")
    cache.close()
    monkeypatch.setattr(code_facts, "_FACTS", type(code_facts._FACTS)())  # a new process
    monkeypatch.setattr(code_facts, "parse_tree_facts", lambda s: pytest.fail("parsed again"))
    again = FactsCache.in_dir(tmp_path)
    assert again is not None
    for source in sources:
        assert code_facts.cached_facts(source + "\n# one", again) == walk_facts(source + "\n# one")
    again.close()
    monkeypatch.setenv("RBENCH_CHUNK_CACHE", "0")
    assert FactsCache.in_dir(tmp_path) is None


def test_file_sources_are_read_once_per_corpus_and_key_facts_by_their_sha(
    tmp_path: Path,
) -> None:
    import hashlib

    from retrieval_bench.corpus import Corpus
    from retrieval_bench.retrieval.file_bm25 import file_source, file_text
    from retrieval_bench.types import Chunk

    data = b"import os\r\nx = os.sep\r\n"
    (tmp_path / "m.py").write_bytes(data)
    chunk = Chunk("c1", "m.py", 1, 2, "python", "file", None, "import os\nx = os.sep")
    corpus = Corpus(tmp_path, [chunk])
    text, sha = file_source(corpus, "m.py")
    assert text == "import os\nx = os.sep\n" == file_text(corpus, "m.py")  # text-mode newlines
    assert sha == hashlib.sha256(data).hexdigest()
    (tmp_path / "m.py").write_bytes(b"changed = 1\n")
    assert file_source(corpus, "m.py") == (text, sha)  # the corpus's snapshot, read once
    assert file_text(Corpus(tmp_path, [chunk]), "m.py") == "changed = 1\n"
    facts = code_facts.cached_facts(text, None, sha)
    assert facts == walk_facts(text)
    assert code_facts.cached_facts("anything", None, sha) is facts  # keyed by the bytes' hash

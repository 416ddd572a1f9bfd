"""The code graph's facts from a tree-sitter tree equal those Python's ``ast`` reads
(retrieval_bench/chunking/tree_facts.py, docs/stages.md#code-structure), rule by
rule and on real files; the chunker hands over the facts of the tree it parsed,
and the graph stage takes them instead of parsing the file again."""

from __future__ import annotations

import ast
import hashlib
import threading
from pathlib import Path

import pytest

from retrieval_bench.chunking import facts_handover
from retrieval_bench.chunking.facts_handover import take_handed
from retrieval_bench.chunking.tree_facts import parse_tree_facts
from retrieval_bench.contracts import registry
from retrieval_bench.files import SourceFile
from retrieval_bench.retrieval import code_facts
from retrieval_bench.retrieval.code_facts import parse_facts

RULES = {
    "defines at any depth": "class A:\n    def m(self):\n        async def inner(): pass\n",
    "module-level assignments": (
        "a = b = 1\nc, (d, [e, *f]) = g\nh: int = 1\ni: str\n(j): int = 2\nk.l = m[0] = 3\n"
        "n += 1\nfor o in p: q = 1\ndef r():\n    s = 1\n"
    ),
    "assignments inside module-level if/try/with": (
        "if x:\n    a = 1\nelif y:\n    b = 1\nelse:\n    c = 1\n"
        "try:\n    d = 1\nexcept E:\n    e = 1\nelse:\n    f = 1\nfinally:\n    g = 1\n"
        "with w as v:\n    h = 1\nwhile z:\n    i = 1\n"
    ),
    "assignments inside try/except* are not module level (ast.TryStar)": (
        "try:\n    a = 1\nexcept* E:\n    b = 1\n"
    ),
    "import forms": (
        "import a.b.c\nimport a . b as c, d\nfrom . import (x as y, z)\nfrom .. m import *\n"
        "from ...p.q import r\nfrom __future__ import annotations\nfrom . . s import t\n"
    ),
    "import depths: elif chains, else, except, match": (
        "if a:\n    import i1\nelif b:\n    import i2\nelif c:\n    import i3\nelse:\n"
        "    import i4\ntry:\n    import i5\nexcept E:\n    import i6\nelse:\n    import i7\n"
        "finally:\n    import i8\nfor x in y:\n    import i9\nelse:\n    import i10\n"
        "match q:\n    case 1:\n        import i11\nwith w:\n    import i12\n"
        "class K:\n    def f(self):\n        if u:\n            import i13\n    import i14\n"
        "import i0\n@deco\ndef g():\n    import i15\n"
    ),
    "stores are not reads": (
        "self.a = 1\nx.b += 1\ndel x.c, y.d\nfor x.e in f: pass\n[g for x.h in i]\n"
        "with j as x.k: pass\nx.l, (x.m, *x.n) = o\n(x.p) = 1\nx.q: int = 2\n"
        "x.r.s = 3\nx.t[u.v] = 4\nx.w = x.w + 1\n"
    ),
    "calls and attribute reads": (
        "f(g.h)\n(k)(1)\n(m).n\nobj.meth().attr\n@deco.rator\n@factory(1)\ndef d(): pass\n"
        "s = f'{fmt.x:{fmt.width}}'\nlam = lambda: q.r\nt = [*u.v, *w.x(1)]\n"
        "y = {*z.a}\nd = {**z.b}\n"
        "print >>sys.stderr, os.sep\n"
    ),
    "match patterns read attributes": (
        "match p:\n    case Color.RED | a.b.c:\n        pass\n    case mod.Point(x=0):\n"
        "        pass\n    case [1, other.K]:\n        pass\n"
    ),
    "the type(x).y = … statement the grammar reads as a type alias": "type(obj).__doc__ = doc\n",
    "filtered names": (
        "import os\nfrom m import used as alias\ndef own(): pass\n"
        "own(); len(x); alias(); x.__dict__; os.path.join(a.own, b.other)\n"
    ),
    "keywords and soft keywords as names": (
        "match(x)\nobj.match\ntype = 1\ndef print(): pass\nexec(code)\nobj.print(1)\n"
    ),
    "non-ASCII names are NFKC-normalized": "\ufb01le = 1\nx.\ufb01eld\n\u2160()\n",
    "empty": "",
    "crlf": "import os\r\nx = os.sep\r\n",
    "form feed": "import os\n\x0cdef f():\n    return os.sep\n",
}

PYTHON_2 = {
    "print statement": "print 'hello'\n",
    "exec statement": "exec 'x = 1'\n",
    "except with a comma": "try:\n    pass\nexcept E, e:\n    pass\n",
    "raise with a comma": "raise E, 'message'\n",
    "octal literal": "mode = 0777\n",
    "long literal": "n = 10L\n",
    "ur string": "s = ur'x'\n",
    "not-equal <>": "if a <> b:\n    pass\n",
    "backticks": "s = `x`\n",
    "tuple parameters": "def f(a, (b, c)):\n    pass\nh = lambda (u, v): u\n",
    "a syntax error": "def ok():\n    pass\ndef bad(:\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_matches_ast(name: str) -> None:
    source = RULES[name]
    expected = parse_facts(source)
    assert expected is not None
    assert parse_tree_facts(source) == expected


def test_imports_come_in_ast_walk_order() -> None:
    facts = parse_tree_facts(RULES["import depths: elif chains, else, except, match"])
    assert facts is not None
    assert [r.module for r in facts.imports] == [
        "i0",  # depth 1, then 2: the bodies of if, try, else, finally, for, with, def
        *("i1", "i5", "i7", "i8", "i9", "i10", "i12", "i14", "i15"),
        *("i2", "i6", "i11"),  # 3: first elif, except handler, match case
        *("i3", "i4", "i13"),  # 4: second elif and the else after it, if in a method
    ]


@pytest.mark.parametrize("name", sorted(PYTHON_2))
def test_what_ast_cannot_parse_gives_none(name: str) -> None:
    source = PYTHON_2[name] + "import os\nx = os.sep\n"
    assert parse_facts(source) is None
    assert parse_tree_facts(source) is None


def test_python_2_hints_in_strings_and_comments_are_not_python_2() -> None:
    source = "s = '0777 10L a <> b `x` ur'  # 0777 `y`\n"
    source += "'''\n`doc` 0777\n'''\nn = 0o777 + 00 + 07j + 0x1F + 2001\n"
    assert parse_facts(source) is not None
    assert parse_tree_facts(source) == parse_facts(source)


def test_a_genuine_grammar_disagreement() -> None:
    """A bracket's continuation line dedented below its block: Python's tokenizer
    ignores indentation inside brackets, tree-sitter's indentation scanner does not
    (seen in pytest's history); the graph skips such a file."""
    source = 'def f():\n    if x:\n        e.append("a" %\n    (b))\n'
    assert parse_facts(source) is not None
    assert parse_tree_facts(source) is None


def _real_files() -> list[Path]:
    """The project's tests and the standard library's top-level modules (its own
    modules: test_code_facts.py)."""
    project = Path(code_facts.__file__).resolve().parents[2]
    stdlib = Path(ast.__file__).parent
    files = sorted(project.glob("tests/**/*.py"))
    return files + sorted(p for p in stdlib.glob("*.py") if p.stat().st_size < 80_000)


@pytest.mark.slow
def test_real_files_match_ast() -> None:
    files = _real_files()
    assert len(files) > 300
    differ = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if parse_tree_facts(text) != parse_facts(text):
            differ.append(path.name)
    assert differ == []


def _handed(source: bytes) -> tuple[bool, object]:
    return take_handed(b"sha256:" + hashlib.sha256(source).digest())


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """A process where the graph stage has not asked for facts yet."""
    event = threading.Event()
    monkeypatch.setattr(facts_handover, "_asked", event)
    return event


def test_facts_are_handed_over_once_the_graph_asked_for_them(asked: threading.Event) -> None:
    text = RULES["calls and attribute reads"] * 10
    chunker = registry.create("chunkers", "ast", budget=32)
    chunker.chunk_file(SourceFile("m.py", text, "0" * 64))
    assert not asked.is_set()
    assert _handed(text.encode()) == (False, None)  # a run without a graph pays nothing
    assert asked.is_set()
    chunker.chunk_file(SourceFile("m.py", text, "0" * 64))
    assert _handed(text.encode()) == (True, parse_facts(text))


def test_the_chunker_hands_over_the_facts_of_its_parse(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, asked: threading.Event
) -> None:
    asked.set()
    from retrieval_bench.retrieval.facts_cache import FactsCache

    text = Path(code_facts.__file__).read_text(encoding="utf-8")  # above the budget
    data = text.encode()
    chunker = registry.create("chunkers", "ast", budget=128)
    sha = hashlib.sha256(data).hexdigest()
    chunker.chunk_file(SourceFile("pkg/code_facts.py", text, sha))
    monkeypatch.setattr(code_facts, "_FACTS", type(code_facts._FACTS)())
    monkeypatch.setattr(code_facts, "parse_tree_facts", lambda s: pytest.fail("parsed again"))
    cache = FactsCache.in_dir(tmp_path)
    assert cache is not None
    facts = code_facts.cached_facts(text, cache, sha)
    assert facts == parse_facts(text)
    assert _handed(data) == (False, None)  # taken once
    cache.close()
    monkeypatch.setattr(code_facts, "_FACTS", type(code_facts._FACTS)())
    again = FactsCache.in_dir(tmp_path)
    assert again is not None
    assert code_facts.cached_facts(text, again, sha) == facts  # written to the store
    again.close()


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("small.py", "import os\n"),  # one chunk: the chunker parses nothing
        ("notes.txt", RULES["stores are not reads"] * 20),
        ("stub.pyi", RULES["stores are not reads"] * 20),
        ("crlf.py", RULES["crlf"] * 200),  # the graph reads it with LF line ends
    ],
)
def test_nothing_is_handed_over_without_a_parse_of_the_same_text(
    path: str, text: str, asked: threading.Event
) -> None:
    asked.set()
    registry.create("chunkers", "ast", budget=32).chunk_file(SourceFile(path, text, "0" * 64))
    assert _handed(text.encode()) == (False, None)


def test_a_failure_of_the_facts_leaves_the_chunks_alone(
    monkeypatch: pytest.MonkeyPatch, asked: threading.Event
) -> None:
    asked.set()
    text = RULES["calls and attribute reads"] * 10
    chunker = registry.create("chunkers", "ast", budget=32)
    expected = chunker.chunk_file(SourceFile("m.py", text, "0" * 64))
    _handed(text.encode())

    def broken(*_: object) -> None:
        raise RuntimeError("unforeseen")

    monkeypatch.setattr(facts_handover, "tree_facts", broken)
    assert chunker.chunk_file(SourceFile("m.py", text, "0" * 64)) == expected
    assert _handed(text.encode()) == (False, None)

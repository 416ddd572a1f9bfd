"""Recursion, fallbacks and robustness of the ``ast`` chunker (docs/stages.md#ast)."""

from __future__ import annotations

import pytest

from retrieval_bench.chunking.tokenizer import REGEX_CODE, WORDPIECE
from retrieval_bench.contracts import registry
from retrieval_bench.contracts.chunker import chunk_id
from tests.unit.chunking.helpers import ast_chunks, check_invariants, source, spans
from tests.unit.chunking.samples import ALL


def _body(n: int, indent: str) -> str:
    return "\n".join(
        f"{indent}value_{i} = compute(item, factor={i}, label='step {i}')" for i in range(n)
    )


NESTED = f'''\
class Outer:
    """Outer docs."""

    class Inner:
        def alpha(self, item):
{_body(3, " " * 12)}
            return value_0

        def beta(self):
            return 2

        def gamma(self, item):
{_body(2, " " * 12)}
            return value_1

    def run(self, item):
        def step(x):
{_body(3, " " * 12)}
            return x

{_body(2, " " * 8)}
        return step(item)

    def big(self, item):
{_body(12, " " * 8)}
        return item
'''


def test_collapse_recurses_with_accumulated_class_headers() -> None:
    chunks = ast_chunks("nested.py", NESTED, 100)
    assert spans(chunks) == [
        ("collapsed", "Outer", 1, 43),
        ("collapsed", "Outer.Inner", 4, 17),
        ("method", "Outer.Inner.alpha", 5, 9),
        ("method", "Outer.Inner.beta", 11, 12),
        ("method", "Outer.Inner.gamma", 14, 17),
        ("collapsed", "Outer.run", 19, 28),  # a method hiding a nested function
        ("function", "Outer.run.step", 20, 24),
        ("window", "Outer.big", 30, 34),  # too big, nothing nested: windows
        ("window", "Outer.big", 35, 39),
        ("window", "Outer.big", 40, 43),
    ]
    by_symbol = {c.symbol: c for c in chunks if c.kind != "window"}
    outer = by_symbol["Outer"]
    assert outer.text.startswith(
        'class Outer:\n    """Outer docs."""\n\n    class Inner:\n        ...'
    )
    assert "    def run(self, item):\n        ...\n" in outer.text
    inner = by_symbol["Outer.Inner"]
    assert inner.text.startswith("class Outer:\n    class Inner:\n        def alpha(self, item):\n")
    alpha = by_symbol["Outer.Inner.alpha"]
    assert alpha.text.startswith("class Outer:\n    class Inner:\n        def alpha(self, item):")
    step = by_symbol["Outer.run.step"]
    assert step.text.startswith("class Outer:\n    def run(self, item):\n        def step(x):")
    run = by_symbol["Outer.run"]
    assert "        def step(x):\n            ...\n" in run.text
    assert run.text.endswith("        return step(item)")
    check_invariants(NESTED, chunks, 100)


def test_big_body_without_nested_definitions_falls_back_to_windows() -> None:
    chunks = ast_chunks("nested.py", NESTED, 100)
    big = [c for c in chunks if c.symbol == "Outer.big"]
    assert {c.kind for c in big} == {"window"}
    assert all(c.text.startswith("class Outer:\n") for c in big)
    assert big[0].text.startswith("class Outer:\n    def big(self, item):\n        value_0 =")
    assert [(c.start_line, c.end_line) for c in big] == [(30, 34), (35, 39), (40, 43)]


def test_nested_class_that_fits_is_a_class_chunk() -> None:
    chunks = ast_chunks("nested.py", NESTED, 200)
    kinds = {c.symbol: c.kind for c in chunks if c.kind != "window"}
    assert kinds["Outer.Inner"] == "class"
    assert "Outer.Inner.alpha" not in kinds


def test_unknown_extension_falls_back_to_line_windows() -> None:
    text = "\n".join(f"line {i} of some plain text notes" for i in range(60)) + "\n"
    chunks = ast_chunks("notes/readme.unknownext", text, 64)
    assert len(chunks) > 1
    assert {c.kind for c in chunks} == {"window"}
    assert {c.language for c in chunks} == {"text"}
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 60
    check_invariants(text, chunks, 64)
    (md,) = ast_chunks("README.md", "# Title\n\nSome text.\n", 64)
    assert (md.kind, md.language) == ("file", "markdown")


BROKEN = {
    "broken.py": "import os\n\ndef broken(a, b:\n    return a +\n\n"
    + _body(12, "    ")
    + "\n\nclass Good:\n    def ok(self):\n        return 1\n\n"
    + "    def other(self):\n        return 2\n",
    "broken.js": "function a() {\n  if (x {\n    return 1;\n}\n\n"
    + "class B {\n  m() { return 2; }\n}\n"
    + "\n".join(f"const v{i} = compute({i}, 'label {i}');" for i in range(20)),
    "broken.go": "package x\n\nfunc (s *S Get() {\n\treturn\n}\n\n"
    + "\n".join(f"var v{i} = compute({i})" for i in range(30)),
    "broken.rs": "fn main( {\n    let x = ;\n}\nimpl S { fn a(&self) -> i32 { 1 } }\n"
    + "\n".join(f"const C{i}: i32 = {i};" for i in range(30)),
    "garbage.ts": "}}}{{{ ((( class def ]]] <<<\n" * 40,
    "Broken.java": "public class A {\n  void m( {\n" + "    int x = 1;\n" * 40,
}


@pytest.mark.parametrize("path", list(BROKEN))
@pytest.mark.parametrize("budget", [32, 64])
def test_syntax_errors_still_yield_chunks_covering_the_file(path: str, budget: int) -> None:
    text = BROKEN[path]
    chunks = ast_chunks(path, text, budget)
    assert chunks
    check_invariants(text, chunks, budget)


def test_definitions_after_a_syntax_error_are_still_found() -> None:
    chunks = ast_chunks("broken.py", BROKEN["broken.py"], 64)
    assert ("function", "other") in {(c.kind, c.symbol) for c in chunks}


def test_minified_one_liner_is_windowed_not_duplicated() -> None:
    text = "".join(f"function f{i}(a){{return a*{i}+g(a,{i});}}" for i in range(80)) + "\n"
    chunks = ast_chunks("bundle.min.js", text, 64)
    assert len(chunks) > 1
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.strip().replace(" ", "")
    check_invariants(text, chunks, 64)


def test_empty_and_blank_files_give_no_chunks() -> None:
    assert ast_chunks("a.py", "") == []
    assert ast_chunks("a.py", "\n\n   \n") == []


def test_ids_are_stable_and_follow_the_shared_rule() -> None:
    text = ALL["pkg/index.py"]
    first = ast_chunks("pkg/index.py", text, 100)
    again = ast_chunks("pkg/index.py", text, 100)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)
    for c in first:
        assert c.id == chunk_id("pkg/index.py", c.start_line, c.end_line, c.text)
    moved = ast_chunks("other/index.py", text, 100)
    assert not {c.id for c in first} & {c.id for c in moved}


def test_whole_file_chunk_is_shared_with_truncate() -> None:
    """Same text → same id, so the embedding cache can reuse it."""
    text = ALL["src/lib.rs"]
    (a,) = ast_chunks("src/lib.rs", text, 512)
    (t,) = registry.create("chunkers", "truncate").chunk_file(source("src/lib.rs", text))
    assert a.id == t.id


def test_config_and_attributes() -> None:
    chunker = registry.create("chunkers", "ast", budget=256, tokenizer=REGEX_CODE)
    assert chunker.name == "ast"
    assert chunker.tokenizer_name == REGEX_CODE
    assert chunker.config() == {"budget": 256, "tokenizer": REGEX_CODE}
    assert registry.create("chunkers", "ast").config() == {"budget": 512, "tokenizer": WORDPIECE}
    with pytest.raises(ValueError):
        registry.create("chunkers", "ast", budget=4)


def test_huge_class_header_does_not_eat_the_budget() -> None:
    bases = ", ".join(f"Mixin{i}" for i in range(60))
    text = f"class Big({bases}):\n" + "\n".join(
        f"    def m{i}(self):\n{_body(3, ' ' * 8)}\n" for i in range(6)
    )
    chunks = ast_chunks("big.py", text, 128)
    methods = [c for c in chunks if c.kind == "method"]
    assert methods
    assert all(not c.text.startswith("class Big(") for c in methods)
    check_invariants(text, chunks, 128)


TRICKY = {
    "mod.rs": """\
pub trait Shape {
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        format!("shape {}", self.area())
    }
}

mod geometry {
    pub fn square(x: f64) -> f64 {
        x * x * 1.0 + 0.0 - 0.0 * x
    }

    pub const UNIT: f64 = 1.0;
}
""",
    "ns.ts": """\
export namespace Geometry {
  export function square(x: number): number {
    return x * x * 1.0 + 0.0 - 0.0 * x;
  }
  export const ORIGIN = { x: 0, y: 0 };
}
""",
    "Color.java": """\
public enum Color {
    RED, GREEN;

    public String lower() {
        return name().toLowerCase();
    }

    public String upper() {
        return name().toUpperCase();
    }
}
""",
}


@pytest.mark.parametrize(
    "path,expected",
    [
        ("mod.rs", {("method", "Shape.describe"), ("function", "geometry.square")}),
        ("ns.ts", {("function", "Geometry.square")}),
        ("Color.java", {("method", "Color.lower"), ("method", "Color.upper")}),
    ],
)
def test_traits_modules_namespaces_and_enums(path: str, expected: set[tuple[str, str]]) -> None:
    text = TRICKY[path]
    chunks = ast_chunks(path, text, 40)
    assert expected <= {(c.kind, c.symbol) for c in chunks}
    headers = {"pub trait Shape {", "mod geometry {", "export namespace Geometry {"}
    headers.add("public enum Color {")
    for c in chunks:
        if c.symbol and "." in c.symbol:
            assert c.text.split("\n", 1)[0] in headers
    assert any(c.kind == "collapsed" for c in chunks)
    check_invariants(text, chunks, 40)

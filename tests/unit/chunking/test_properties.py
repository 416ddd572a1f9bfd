"""Invariants over many inputs (docs/stages.md#ast): every non-blank line of a file is in
some chunk, ``n_tokens`` is exactly the named tokenizer's count of the chunk
text, no chunk exceeds its budget, ids follow the shared rule.

Inputs: the inline samples at several budgets and with both tokenizers, the
same samples with lines deleted (syntax errors), and real trees — this package
and the fixture repositories."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from retrieval_bench.chunking.languages import SPECS, language_for_path, spec_for_path
from retrieval_bench.chunking.tokenizer import REGEX_CODE, WORDPIECE
from retrieval_bench.contracts import registry
from retrieval_bench.files import iter_source_files
from tests.unit.chunking.helpers import ast_chunks, check_invariants, source
from tests.unit.chunking.samples import ALL

ROOT = Path(__file__).resolve().parents[3]


def _mutants(text: str, n: int, seed: int) -> list[str]:
    """Copies of ``text`` with one or two random lines deleted (often a syntax error)."""
    rng = random.Random(seed)
    lines = text.split("\n")
    out = []
    for _ in range(n):
        drop = set(rng.sample(range(len(lines)), k=min(2, len(lines))))
        out.append("\n".join(line for i, line in enumerate(lines) if i not in drop))
    return out


@pytest.mark.parametrize("tokenizer", [WORDPIECE, REGEX_CODE])
@pytest.mark.parametrize("budget", [16, 24, 48, 96, 200])
@pytest.mark.parametrize("path", list(ALL))
def test_ast_invariants_on_samples(path: str, budget: int, tokenizer: str) -> None:
    text = ALL[path]
    chunks = ast_chunks(path, text, budget, tokenizer=tokenizer)
    check_invariants(text, chunks, budget, tokenizer)


@pytest.mark.parametrize("path", list(ALL))
def test_ast_invariants_on_broken_samples(path: str) -> None:
    for i, text in enumerate(_mutants(ALL[path], 12, seed=len(path))):
        for budget in (20, 64):
            chunks = ast_chunks(path, text, budget)
            if text.strip():
                assert chunks, (i, budget)
            check_invariants(text, chunks, budget)


def _tree_files(root: Path) -> list[tuple[str, str]]:
    return [(f.path, f.text) for f in iter_source_files(root)]


@pytest.mark.parametrize(
    "root", [ROOT / "retrieval_bench", ROOT / "fixtures" / "repos"], ids=["package", "fixtures"]
)
def test_ast_invariants_on_real_trees(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    files = _tree_files(root)
    assert files
    chunker = registry.create("chunkers", "ast", budget=128)
    for path, text in files:
        chunks = chunker.chunk_file(source(path, text))
        check_invariants(text, chunks, 128)


@pytest.mark.parametrize(
    "name,params",
    [
        ("window", {"size": 32}),
        ("window", {"size": 32, "overlap": 8}),
        ("window", {"size": 10, "unit": "lines", "overlap": 3}),
        ("truncate", {"max_tokens": 64}),
    ],
)
def test_window_and_truncate_invariants(name: str, params: dict[str, object]) -> None:
    chunker = registry.create("chunkers", name, **params)
    for path, text in ALL.items():
        chunks = chunker.chunk_file(source(path, text))
        budget = params.get("size") if params.get("unit") != "lines" else None
        if name == "truncate":
            assert len(chunks) == 1 and chunks[0].start_line == 1
            assert chunks[0].n_tokens <= 64
            continue
        check_invariants(text, chunks, budget)  # type: ignore[arg-type]


def test_every_spec_loads_and_parses() -> None:
    for name, spec in SPECS.items():
        tree = spec.parser().parse(b"x")
        assert tree.root_node is not None, name


@pytest.mark.parametrize(
    "path,language,parsed",
    [
        ("a.py", "python", True),
        ("a.pyi", "python", True),
        ("a.js", "javascript", True),
        ("a.mjs", "javascript", True),
        ("a.cjs", "javascript", True),
        ("a.jsx", "javascript", True),
        ("a.ts", "typescript", True),
        ("a.tsx", "tsx", True),
        ("a.go", "go", True),
        ("a.rs", "rust", True),
        ("A.java", "java", True),
        ("README.md", "markdown", False),
        ("Makefile", "make", False),
        ("notes.xyz", "text", False),
        ("UPPER.PY", "python", True),
    ],
)
def test_language_for_path(path: str, language: str, parsed: bool) -> None:
    assert language_for_path(path) == language
    assert (spec_for_path(path) is not None) == parsed

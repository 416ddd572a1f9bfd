"""The command line lives in ``retrieval_bench/cli/`` and nothing else imports it:
library code (harness, web, prompt_eval, ...) is usable without the CLI, and the
CLI's modules may change without touching it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import retrieval_bench

ROOT = Path(retrieval_bench.__file__).resolve().parent
CLI = "retrieval_bench.cli"


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_library_module_imports_the_cli() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if (ROOT / "cli") in path.parents:
            continue
        imported = _imported(ast.parse(path.read_text(encoding="utf-8")))
        if any(name == CLI or name.startswith(CLI + ".") for name in imported):
            offenders.append(str(path.relative_to(ROOT.parent)))
    assert offenders == []


def test_python_dash_m_runs_the_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", CLI, "--help"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("usage: rbench")

"""Module size: every module of ``retrieval_bench`` has at most 400 lines, or
says in its docstring why it is longer, on a line starting with ``Size:``
(e.g. ``Size: one algorithm whose steps share the same state``).

A long module usually holds several things that change for different reasons;
split it where a seam exists (see docs/architecture.md for where things live).
"""

from __future__ import annotations

import ast
from pathlib import Path

import retrieval_bench

MAX_LINES = 400
ROOT = Path(retrieval_bench.__file__).resolve().parent


def size_reason(source: str) -> str | None:
    """The text after ``Size:`` in the module docstring, None when there is none."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    for line in docstring.splitlines():
        if line.strip().startswith("Size:"):
            return line.strip()[len("Size:") :].strip() or None
    return None


def oversized(root: Path = ROOT, limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` of every module over ``limit`` lines without a stated reason."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        n = len(source.splitlines())
        if n > limit and size_reason(source) is None:
            found.append(f"{path.relative_to(root.parent)}: {n} lines")
    return found


def test_size_reason_is_read_from_the_docstring_only() -> None:
    assert size_reason('"""Parser.\n\nSize: one grammar, one table.\n"""\n') == (
        "one grammar, one table."
    )
    assert size_reason('"""Parser."""\n# Size: a comment does not count\n') is None
    assert size_reason('"""Parser.\n\nSize:\n"""\n') is None  # a reason must be given


def test_oversized_lists_long_modules_without_a_reason(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "short.py").write_text('"""Short."""\nx = 1\n')
    (pkg / "long.py").write_text('"""Long."""\n' + "x = 1\n" * 5)
    (pkg / "excused.py").write_text('"""Long.\n\nSize: a table.\n"""\n' + "x = 1\n" * 5)
    assert oversized(pkg, limit=4) == ["pkg/long.py: 6 lines"]


def test_every_module_is_short_or_says_why() -> None:
    offenders = oversized()
    assert not offenders, (
        f"modules over {MAX_LINES} lines without a 'Size:' line in their docstring "
        "(split them, or state why not):\n" + "\n".join(offenders)
    )

"""The walker's ignore rules agree with git's on generated trees and pattern lists
(docs/datasets.md#ignore-rules-and-skipped-files).

Seeded and deterministic: every case is a small tree with a root ``.gitignore``,
sometimes deeper ``.gitignore`` files and a dataset's extra ``ignore:`` list. All
cases are written side by side into one real git repository and compared with what
``git ls-files --others --exclude-standard`` lists (the files git does not ignore):

- ``g<i>/``: the tree with its ignore files; the walker with the extra list must keep
  exactly git's files of ``g<i>/`` that git also keeps in
- ``e<i>/`` (cases with an extra list): the same tree and file names with the extra
  list as the only rules (the extra list drops more, it never re-includes what the
  repository ignores).

Hand-picked cases come first: the SWE-bench whitelist (``*``, ``!*.py``, ``!*/``), a
file re-included below an excluded folder (git: still excluded), folder-only,
anchored and ``**`` patterns, escapes, and a deeper file overriding a shallower one.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.files import IgnoreRules, walk_kept

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SEED = 19
RANDOM_CASES = 600

FOLDERS = ["a", "b", "src", "build", "docs", "lib", "x.py", "sub dir"]
FILES = [
    "a", "b", "x.py", "y.txt", "z.log", "test_a.py", "Foo.PY", "keep.py", "data.json",
    "#notes", "!bang", "t ", "a.b.py", "README.md", "build",
]  # fmt: skip
PATTERNS = [
    "*", "*.py", "!*.py", "*/", "!*/", "*.txt", "!*.txt", "*.log", "x*", "?.py", "[ab]",
    "[!a]*", "[a-c]*.py", "test_*", "b", "a", "src", "build", "**", "*.P?", "build/",
    "src/", "a/", "!a/", "/a", "/src/*.py", "a/b", "src/**/test_*", "**/build", "a/**",
    "**/a/*.txt", "/*", "/*/", "/*.py", "src/*/", "!src/**", "!/build/keep.py",
    "!build/keep.py", "**/*.py", "!**/*.py", "docs/**/*.md", "a/**/b", "\\#notes",
    "\\!bang", "!\\!bang", "t\\ ", "t ", "# a comment", "", "lib", "!lib/", "sub dir/",
    "sub?dir", "*.b.*", "**/", "!**/", "[[:upper:]]*", "*[!y].txt", "b/**/*.log", "*/*",
    "a/**/", "**/**", "[]a]*", "[a-]*", "\\*", "[", "*.py/", "!x.py/", "/a/", "!/a/",
    "[[:bogus:]]", "a/*/b", "***", "*a**", "[^a]", "[z-a]*",
]  # fmt: skip
HAND_PICKED: list[tuple[dict[str, list[str]], list[str]]] = [
    ({"": ["*", "!*.py", "!*/"]}, []),
    ({}, ["*", "!*.py", "!*/"]),
    ({"": ["build", "!build/keep.py"]}, []),
    ({"": ["build/", "!build/keep.py", "!*/"]}, []),
    ({"": ["*.py", "!src/"]}, []),
    ({"": ["/a", "b/a", "**/lib", "src/**", "a/**/x.py"]}, []),
    ({"": ["*.log"], "a": ["!z.log"]}, []),
    ({"": ["!*.txt"], "a": ["*.txt"], "a/b": ["!y.txt"]}, []),
    ({"": ["a/"], "a": ["!x.py"]}, []),
    ({"": ["*", "!*/"], "src": ["!*.py"]}, ["*.log"]),
    ({"": ["\\#notes", "\\!bang", "t\\ "]}, ["x*"]),
]


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "XDG_CONFIG_HOME": str(cwd / ".xdg"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _tree(rng: random.Random, depth: int = 0) -> dict[str, object]:
    """A folder: name → None (a file) or a sub-folder."""
    node: dict[str, object] = {}
    for name in rng.sample(FILES, rng.randint(1, 3)):
        node[name] = None
    if depth < 3:
        for name in rng.sample(FOLDERS, rng.randint(0, 3 - depth)):
            if name not in node:
                node[name] = _tree(rng, depth + 1)
    return node


def _folders(node: dict[str, object], prefix: str = "") -> list[str]:
    out = [prefix]
    for name, child in node.items():
        if isinstance(child, dict):
            out += _folders(child, f"{prefix}{name}/")
    return out


def _write(root: Path, node: dict[str, object]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, child in node.items():
        if isinstance(child, dict):
            _write(root / name, child)
        else:
            (root / name).write_text("x\n")


def _random_case(rng: random.Random) -> tuple[dict[str, object], dict[str, list[str]], list[str]]:
    tree = _tree(rng)
    ignores = {"": rng.sample(PATTERNS, rng.randint(1, 6))}
    for folder in _folders(tree)[1:]:
        if rng.random() < 0.25:
            ignores[folder.rstrip("/")] = rng.sample(PATTERNS, rng.randint(1, 3))
    extra = rng.sample(PATTERNS, rng.randint(1, 4)) if rng.random() < 0.4 else []
    return tree, ignores, extra


def _hand_picked_tree() -> dict[str, object]:
    rng = random.Random(SEED - 1)
    tree = _tree(rng)
    tree.update(
        {
            "x.py": None,
            "build": {"keep.py": None, "y.txt": None, "a": {"keep.py": None}},
            "src": {"x.py": None, "z.log": None, "lib": {"test_a.py": None}},
            "a": {"x.py": None, "y.txt": None, "z.log": None, "b": {"y.txt": None, "a": None}},
            "#notes": None,
            "!bang": None,
            "t ": None,
        }
    )
    return tree


def _ignore_files(root: Path, ignores: dict[str, list[str]]) -> None:
    for folder, lines in ignores.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / ".gitignore").write_text("\n".join(lines) + "\n")


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A folder for thousands of tiny files: on tmpfs when there is one (creating a file
    on a busy disk costs about a millisecond), else ``tmp_path``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="rbench-ignore-rules-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_walker_keeps_what_git_keeps(scratch: Path) -> None:
    rng = random.Random(SEED)
    cases = [(_hand_picked_tree(), ignores, extra) for ignores, extra in HAND_PICKED]
    cases += [_random_case(rng) for _ in range(RANDOM_CASES)]
    repo = scratch / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for i, (tree, ignores, extra) in enumerate(cases):
        _write(repo / f"g{i}", tree)
        _ignore_files(repo / f"g{i}", ignores)
        if extra:
            _write(repo / f"e{i}", tree)
            _ignore_files(repo / f"e{i}", {f: [] for f in ignores} | {"": extra})
    listed = _git(repo, "ls-files", "--others", "--exclude-standard", "-z").split("\0")
    kept: dict[str, set[str]] = {}
    for path in filter(None, listed):
        top, _, rest = path.partition("/")
        kept.setdefault(top, set()).add(rest)

    disagreements = []
    for i, (_, ignores, extra) in enumerate(cases):
        want = kept.get(f"g{i}", set())
        if extra:
            want &= kept.get(f"e{i}", set())
        root = repo / f"g{i}"
        got = set(walk_kept(root, IgnoreRules(root, tuple(extra))))
        if got != want:
            disagreements.append(
                f"case {i} {ignores} extra={extra}: walker only {sorted(got - want)}, "
                f"git only {sorted(want - got)}"
            )
    print(f"{len(cases)} cases compared with git ({len(HAND_PICKED)} hand-picked)")
    assert not disagreements, "\n".join(disagreements[:5])
    assert "build/keep.py" not in kept["g2"]  # git never re-includes below an excluded folder
    assert {"a/x.py", "src/lib/test_a.py"} <= kept["g0"]  # the whitelist keeps nested files

"""Index names: any repository folder name gives a valid, distinct LanceDB index name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrieval_bench.chunking.window import WindowChunker
from retrieval_bench.harness.run.prepare import index_name
from retrieval_bench.snapshot import Snapshot

VALID = re.compile(r"^[A-Za-z0-9_.-]+$")  # what CodebaseIndex accepts


def _name(root: Path) -> str:
    snap = Snapshot(root=root, source=str(root), kind="folder", fingerprint="f")
    return index_name(snap, WindowChunker(), "model")


@pytest.mark.parametrize(
    ("folder", "prefix"),
    [
        ("wëird repo ü", "weird-repo-u-"),
        ("my repo (copy)", "my-repo-copy-"),
        ("日本語", "repo-"),
        ("..hidden dir", "hidden-dir-"),
        ("a" * 300, "a" * 40 + "-"),
        ("shopapi", "shopapi-"),  # valid names are kept: existing indexes stay found
        ("pytest-7.4.0", "pytest-7.4.0-"),
    ],
)
def test_folder_names_become_valid_index_names(tmp_path: Path, folder: str, prefix: str) -> None:
    name = _name(tmp_path / folder)
    assert VALID.match(name) and name.startswith(prefix)
    assert re.fullmatch(re.escape(prefix) + r"[0-9a-f]{12}", name)


def test_folders_that_fold_alike_keep_distinct_names(tmp_path: Path) -> None:
    names = {_name(tmp_path / f) for f in ("a b", "a-b", "a  b", "á b")}
    assert len(names) == 4 and len({n.rsplit("-", 1)[0] for n in names}) == 1


def test_ignore_and_include_lists_get_their_own_index(tmp_path: Path) -> None:
    snap = Snapshot(root=tmp_path, source=str(tmp_path), kind="folder", fingerprint="f")
    names = {
        index_name(snap, WindowChunker(), "model", ignore, include)
        for ignore, include in (((), ()), (("*.md",), ()), ((), ("*.py",)), (("*.md",), ("*.py",)))
    }
    assert len(names) == 4
    assert index_name(snap, WindowChunker(), "model") == _name(tmp_path)  # old names kept

"""The repository walk: skip reasons, and the process memos of ignore verdicts and of
read-only files giving exactly what a fresh walk gives (docs/architecture.md#caches)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval_bench import files
from retrieval_bench.errors import ConfigError
from retrieval_bench.files import WalkReport, iter_source_files, read_source_file


def _tree(root: Path) -> Path:
    (root / "pkg" / "gen").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\n")
    (root / "pkg" / ".gitignore").write_text("gen/\n")
    (root / "pkg" / "a.py").write_text("def a():\n    return 1\n")
    (root / "pkg" / "no.log").write_text("ignored by the root's rule\n")
    (root / "pkg" / "gen" / "out.py").write_text("x = 1\n")
    (root / "top.log").write_text("ignored\n")
    (root / "empty.py").write_text("   \n")
    (root / "bin.dat").write_bytes(b"\x00\x01binary")
    (root / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "big.txt").write_text("y" * 200)
    return root


def _walk(root: Path) -> tuple[list[files.SourceFile], WalkReport]:
    report = WalkReport()
    return list(iter_source_files(root, max_bytes=100, report=report)), report


def _read_only(root: Path) -> None:
    """Make every file read-only with a second link (as a tree's files in the blob store)."""
    store = root.parent / "store"
    store.mkdir()
    for dirpath, _, names in os.walk(root):
        for i, name in enumerate(names):
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o444)
            os.link(path, store / f"{len(list(store.iterdir()))}-{i}")


def test_walk_skips_with_reasons_and_memoised_walks_agree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    first, report = _walk(root)
    paths = [".gitignore", "latin.txt", "pkg/.gitignore", "pkg/a.py"]
    assert [f.path for f in first] == paths
    assert report.skipped == {
        "big.txt": "larger than 100 bytes",
        "bin.dat": "binary",
        "empty.py": "empty",
    }
    assert report.non_utf8 == ["latin.txt"] and first[1].decode_errors
    _read_only(root)
    read_only, ro_report = _walk(root)  # read and remembered
    again, again_report = _walk(root)  # served from the memo
    assert first == read_only == again
    assert (report.skipped, report.non_utf8) == (ro_report.skipped, ro_report.non_utf8)
    assert (report.skipped, report.non_utf8) == (again_report.skipped, again_report.non_utf8)


def test_a_writable_file_is_read_again_even_with_the_same_size_and_time(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    before = os.stat(path)
    first = read_source_file(tmp_path, "a.py")
    assert first is not None and first.text == "x = 1\n"
    path.write_text("y = 2\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = read_source_file(tmp_path, "a.py")
    assert again is not None and again.text == "y = 2\n"


def test_a_linked_read_only_file_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    path.chmod(0o444)
    lone = read_source_file(tmp_path, "a.py")  # one link: read, not remembered
    os.link(path, tmp_path / "b.py")  # a second link: the same inode
    first = read_source_file(tmp_path, "a.py")
    assert first == lone
    assert first is not None
    calls: list[str] = []
    real = files._read

    def counting(full: str, size: int, max_bytes: int) -> tuple[str | None, str, bool]:
        calls.append(full)
        return real(full, size, max_bytes)

    monkeypatch.setattr(files, "_read", counting)
    assert read_source_file(tmp_path, "a.py") == first and calls == []
    linked = read_source_file(tmp_path, "b.py")  # the same inode, under its own path
    assert linked is not None and linked.path == "b.py" and linked.sha256 == first.sha256
    assert calls == []


def test_ignore_verdicts_follow_the_rules_of_each_tree(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for root, rule in ((a, "*.py\n"), (b, "*.txt\n")):
        root.mkdir()
        (root / ".gitignore").write_text(rule)
        (root / "x.py").write_text("x = 1\n")
        (root / "y.txt").write_text("y\n")
    for _ in range(2):  # the second walk of each takes the remembered verdicts
        assert [f.path for f in iter_source_files(a)] == [".gitignore", "y.txt"]
        assert [f.path for f in iter_source_files(b)] == [".gitignore", "x.py"]


def _nested(root: Path) -> Path:
    for rel in ("top.py", "README.md", "pkg/mod.py", "pkg/sub/deep.py", "pkg/notes.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    return root


def test_the_swebench_whitelist_keeps_nested_python_files(tmp_path: Path) -> None:
    # git keeps every .py file under these rules: "!*/" re-includes the folders "*" excluded
    root = _nested(tmp_path)
    walk = iter_source_files(root, extra_ignore=("*", "!*.py", "!*/"))
    assert [f.path for f in walk] == ["top.py", "pkg/mod.py", "pkg/sub/deep.py"]


def test_a_file_below_an_excluded_folder_cannot_be_re_included(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    (root / ".gitignore").write_text("pkg/\n!pkg/mod.py\n*.md\n")
    (root / "pkg" / ".gitignore").write_text("!*.md\n")  # never read: git skips pkg/
    assert [f.path for f in iter_source_files(root)] == [".gitignore", "top.py"]


def test_a_deeper_gitignore_overrides_a_shallower_one(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    (root / ".gitignore").write_text("*.txt\n")
    (root / "pkg" / ".gitignore").write_text("!notes.txt\n")
    paths = [f.path for f in iter_source_files(root)]
    assert "pkg/notes.txt" in paths


def test_include_keeps_only_matching_files_the_ignore_rules_keep(tmp_path: Path) -> None:
    root = _nested(tmp_path)
    (root / ".gitignore").write_text("deep.py\n")
    walk = iter_source_files(root, include=("*.py",))
    assert [f.path for f in walk] == ["top.py", "pkg/mod.py"]
    walk = iter_source_files(root, include=("pkg/", "*.md"), extra_ignore=("sub/",))
    assert [f.path for f in walk] == ["README.md", "pkg/mod.py", "pkg/notes.txt"]


@pytest.mark.parametrize("glob", ["!*.py", "", "# note", "\\", "[z-a]*.py"])
def test_an_include_glob_that_selects_nothing_is_a_config_error(glob: str) -> None:
    with pytest.raises(ConfigError, match=r"^include: .*\*\.py") as err:
        files.include_spec([glob])
    assert "\n" not in str(err.value)

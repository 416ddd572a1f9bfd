"""The one atomic file write (:mod:`retrieval_bench.store.io`): the old file is kept
and no temp file is left on any failure; the mode asked for, kept or a new file's."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.store import io
from retrieval_bench.store.io import (
    open_atomically,
    write_bytes_atomically,
    write_text_atomically,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_text_chunks_and_bytes_with_no_temp_file_left(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_text_atomically(path, (f"{i}\n" for i in range(3)))
    assert path.read_bytes() == b"0\n1\n2\n"
    write_text_atomically(path, "é\r\n")  # newlines as given, utf-8
    assert path.read_bytes() == "é\r\n".encode()
    write_bytes_atomically(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_failure_midway_keeps_the_old_file_and_removes_the_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text("old")

    def chunks() -> Iterator[str]:
        yield "half"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_text_atomically(path, chunks())
    with pytest.raises(KeyboardInterrupt), open_atomically(path) as fh:
        fh.write(b"half")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_a_failed_rename_keeps_the_old_file_and_removes_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.json"
    path.write_text("old")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_text_atomically(path, "new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_a_missing_folder_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_text_atomically(tmp_path / "no" / "f.json", "x")
    assert not (tmp_path / "no").exists()


def test_the_mode_asked_for_applies_exactly(tmp_path: Path) -> None:
    old = os.umask(0o077)  # an explicit mode is not narrowed by the umask
    try:
        write_text_atomically(tmp_path / "sweep.json", "{}", mode=0o600)
        write_bytes_atomically(tmp_path / "blob", b"x", mode=0o444, sync=False)
        write_bytes_atomically(tmp_path / "tool", b"x", mode=0o555)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "sweep.json") == 0o600
    assert _mode(tmp_path / "blob") == 0o444
    assert _mode(tmp_path / "tool") == 0o555


def test_without_a_mode_a_new_file_follows_the_umask_and_a_replaced_one_keeps_its_mode(
    tmp_path: Path,
) -> None:
    old = os.umask(0o027)
    try:
        write_text_atomically(tmp_path / "new.json", "{}")
        assert _mode(tmp_path / "new.json") == 0o640  # 0666 less the umask, not mkstemp's 0600
    finally:
        os.umask(old)
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o604)
    write_text_atomically(kept, "new")
    assert _mode(kept) == 0o604 and kept.read_text() == "new"


def test_the_umask_is_read_without_changing_it() -> None:
    old = os.umask(0o037)
    try:
        assert io._umask() == 0o037
        assert os.umask(0o037) == 0o037  # still in force
    finally:
        os.umask(old)


def test_through_a_symlink_the_target_is_replaced_and_the_link_kept(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text_atomically(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_reader_sees_the_old_or_the_new_file_never_half(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    with open_atomically(path) as fh:
        fh.write(b"ne")
        assert path.read_text() == "old"  # mid-write the target is untouched
        fh.write(b"w")
    assert path.read_text() == "new"


def test_bytes_pass_over_a_temp_name_a_killed_process_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_bytes_atomically`` names its temp file by process, thread and counter; a
    file of that name left by a killed process with the same pid is not touched."""
    import itertools
    import os
    import threading

    from retrieval_bench.store import io

    monkeypatch.setattr(io, "_SERIAL", itertools.count())
    stale = tmp_path / f".blob.{os.getpid()}-{threading.get_ident()}-0.tmp"
    stale.write_bytes(b"left behind")
    write_bytes_atomically(tmp_path / "blob", b"new", mode=0o444)
    assert (tmp_path / "blob").read_bytes() == b"new" and _mode(tmp_path / "blob") == 0o444
    assert stale.read_bytes() == b"left behind"
    assert sorted(p.name for p in tmp_path.iterdir()) == [stale.name, "blob"]

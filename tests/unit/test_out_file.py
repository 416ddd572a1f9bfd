"""The output-file rule of every ``rbench`` command (:mod:`retrieval_bench.out_file`):
what :meth:`OutFile.check` refuses and with which line, and how
:func:`write_atomically` writes (temp file + rename, mode kept, old file whole on a
failure, through a symlink onto its target)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.out_file import OutFile, out_file, same_file, write_atomically


def test_a_new_file_in_an_existing_folder_passes(tmp_path: Path) -> None:
    out = out_file(str(tmp_path / "new.json"))
    out.write_text("{}\n")
    assert (tmp_path / "new.json").read_text() == "{}\n"


def test_an_existing_file_needs_force(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text("old\n")
    with pytest.raises(ConfigError) as err:
        out_file(str(path))
    assert str(err.value) == f"--out {path} exists; pass --force to replace it"
    out_file(str(path), force=True).write_text("new\n")
    assert path.read_text() == "new\n"


def test_a_dangling_symlink_counts_as_existing(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "absent.json")
    with pytest.raises(ConfigError, match="exists; pass --force"):
        out_file(str(link))


@pytest.mark.parametrize("how", ["same", "spelling", "symlink", "hardlink"])
def test_an_input_is_refused_even_with_force(tmp_path: Path, how: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("keep\n")
    (tmp_path / "sub").mkdir()
    given: Path | str = src
    if how == "spelling":
        given = f"{tmp_path}/sub/../in.jsonl"
    elif how == "symlink":
        given = tmp_path / "sub" / "link.jsonl"
        given.symlink_to(src)
    elif how == "hardlink":
        given = tmp_path / "sub" / "hard.jsonl"
        os.link(src, given)
    with pytest.raises(ConfigError) as err:
        out_file(str(given), force=True, inputs=[(src, "the predictions file")])
    assert str(err.value) == (
        f"--out {given} is an input of this command (the predictions file); choose another file"
    )
    assert src.read_text() == "keep\n"


def test_an_input_not_created_yet_is_refused_by_its_path(tmp_path: Path) -> None:
    db = tmp_path / "ws" / "rbench.sqlite"  # made by the command, after the check
    db.parent.mkdir()
    with pytest.raises(ConfigError, match=r"is an input of this command \(the results database\)"):
        out_file(str(db), inputs=[(db, "the results database")])


def test_unused_inputs_are_skipped(tmp_path: Path) -> None:
    out = out_file(str(tmp_path / "o.json"), inputs=[(None, "the --config file")])
    assert out.inputs == ()


def test_a_folder_is_refused(tmp_path: Path) -> None:
    for given in (str(tmp_path), f"{tmp_path}/", f"{tmp_path / 'not-yet'}/"):
        with pytest.raises(ConfigError) as err:
            out_file(given, force=True)
        assert str(err.value) == f"--out {given} is a folder; name a file to write in it"
    assert not (tmp_path / "not-yet").exists()


def test_a_missing_folder_is_refused_not_created(tmp_path: Path) -> None:
    given = tmp_path / "a" / "b" / "m.json"
    with pytest.raises(ConfigError) as err:
        out_file(str(given), force=True)
    assert str(err.value) == (
        f"--out {given}: folder {given.parent} does not exist; "
        "create it first or choose another file"
    )
    assert not (tmp_path / "a").exists()


def test_a_file_in_the_way_of_the_folder_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("keep me")
    for given in (blocker / "m.json", blocker / "deeper" / "m.json"):
        with pytest.raises(ConfigError) as err:
            out_file(str(given), force=True)
        assert str(err.value) == (
            f"--out {given}: {blocker} is a file, not a folder; choose another file"
        )
    assert blocker.read_text() == "keep me"


def test_a_positional_out_is_named_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("x\n")
    with pytest.raises(ConfigError) as err:
        out_file(str(path), flag="")
    assert str(err.value) == f"{path} exists; pass --force to replace it"


def test_the_write_checks_again(tmp_path: Path) -> None:
    """A file that appeared while the command worked is not replaced without --force."""
    path = tmp_path / "late.json"
    out = out_file(str(path))
    path.write_text("appeared\n")
    with pytest.raises(ConfigError, match="exists; pass --force"):
        out.write_text("mine\n")
    assert path.read_text() == "appeared\n"


def test_an_unwritable_folder_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    out = OutFile(str(folder / "o.json"))
    folder.chmod(0o500)
    try:
        with pytest.raises(ConfigError) as err:
            out.write_text("x")
    finally:
        folder.chmod(0o700)
    assert str(err.value) == (
        f"--out {folder / 'o.json'}: cannot write (Permission denied); choose a writable file"
    )


def test_write_atomically_keeps_the_old_file_whole_on_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("old\n")
    path.chmod(0o640)

    def failing() -> Iterator[str]:
        yield "half"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, failing())
    assert path.read_text() == "old\n" and not list(tmp_path.glob(".*.tmp"))
    write_atomically(path, ["new\n"])
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640  # the replaced file's, not the temp file's


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        path = tmp_path / f"fresh-{umask:o}"
        old = os.umask(umask)
        try:
            write_atomically(path, ["x"])
        finally:
            os.umask(old)
        assert path.stat().st_mode & 0o777 == mode


def test_write_atomically_through_a_symlink_replaces_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomically(link, ["new\n"])
    assert link.is_symlink() and target.read_text() == "new\n"


def test_same_file(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("x")
    os.link(a, tmp_path / "b")
    (tmp_path / "c").write_text("x")
    assert same_file(a, tmp_path / "b")
    assert same_file(tmp_path / "absent", tmp_path / "." / "absent")
    assert not same_file(a, tmp_path / "c")

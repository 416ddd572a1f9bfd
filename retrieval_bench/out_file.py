"""Files a user names for a command to write: one rule for every ``rbench`` command
(``--out FILE`` of ``eval``, ``show``, ``fit-ltr``, ``prompts export``; ``OUT`` of
``dataset import-swebench`` and ``dataset mine``; docs/architecture.md#output-files).

A typo in an output path must never cost data, so before any work
:meth:`OutFile.check` refuses, each as a one-line
:class:`~retrieval_bench.errors.ConfigError` (exit 2) that says what to do:

* a folder, or a name ending in ``/`` (``Path`` would drop the slash and write
  a file of the folder's name);
* a parent folder that does not exist, or is a file: it is never created, so a
  mistyped folder does not silently become a new tree;
* an input of the command — the same path, another spelling of it, a symlink
  to it or a hard link (same device and inode) — even with ``--force``;
* an existing file without ``--force``.

The file is then written atomically (:func:`write_atomically`): a temp file in
the same folder renamed over it, so a failure midway leaves the old file whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from retrieval_bench.errors import ConfigError
from retrieval_bench.store.io import write_text_atomically

FORCE_HELP = "replace the output file if it exists (never one of the command's inputs)"


@dataclass(frozen=True)
class OutFile:
    """An output file as the user typed it, with what it must never replace."""

    text: str
    """The path as typed (a trailing ``/`` names a folder)."""
    force: bool = False
    """``--force``: an existing file (not an input) may be replaced."""
    inputs: tuple[tuple[str, str], ...] = ()
    """(path, role) of each file the command reads, e.g. ``("p.jsonl", "the predictions file")``."""
    flag: str = "--out"
    """How the messages name it: ``--out FILE``, or the bare path for a positional ``OUT``."""

    @property
    def name(self) -> str:
        """``--out preds.jsonl`` (or ``preds.jsonl``), as the messages say it."""
        return f"{self.flag} {self.text}" if self.flag else self.text

    def check(self) -> None:
        """Raise a one-line :class:`ConfigError` when the file may not be written."""
        path = Path(self.text)
        if self.text.endswith(("/", os.sep)) or path.is_dir():
            raise ConfigError(f"{self.name} is a folder; name a file to write in it")
        parent = path.parent
        if not parent.is_dir():
            blocking = next((p for p in (parent, *parent.parents) if p.exists()), None)
            if blocking is not None and not blocking.is_dir():
                raise ConfigError(
                    f"{self.name}: {blocking} is a file, not a folder; choose another file"
                )
            raise ConfigError(
                f"{self.name}: folder {parent} does not exist; "
                "create it first or choose another file"
            )
        for given, role in self.inputs:
            if same_file(path, Path(given)):
                raise ConfigError(
                    f"{self.name} is an input of this command ({role}); choose another file"
                )
        if os.path.lexists(path) and not self.force:
            raise ConfigError(f"{self.name} exists; pass --force to replace it")

    def write_text(self, text: str) -> None:
        """Write ``text`` (see :meth:`write_lines`)."""
        self.write_lines([text])

    def write_lines(self, chunks: Iterable[str]) -> None:
        """Check again (the file may have appeared while the command worked), then
        write the chunks atomically; an unwritable folder is a one-line error."""
        self.check()
        try:
            write_atomically(self.text, chunks)
        except OSError as exc:
            raise ConfigError(
                f"{self.name}: cannot write ({exc.strerror or exc}); choose a writable file"
            ) from None


def out_file(
    text: str,
    *,
    force: bool = False,
    inputs: Iterable[tuple[str | Path | None, str]] = (),
    flag: str = "--out",
) -> OutFile:
    """The checked :class:`OutFile` for ``text``: call it before any work, so a bad
    path costs nothing. Inputs given as None (an option not used) are skipped."""
    kept = tuple((str(p), role) for p, role in inputs if p is not None and str(p))
    out = OutFile(text, force, kept, flag)
    out.check()
    return out


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same device and inode (a symlink or
    a hard link to it), or, where one does not exist yet, the same resolved path."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:  # one of them does not exist (yet): compare the paths
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def write_atomically(path: str | Path, chunks: Iterable[str]) -> None:
    """Write the text chunks to ``path`` atomically
    (:func:`retrieval_bench.store.io.write_text_atomically`): a temp file in the same
    folder, flushed to disk and renamed over ``path`` (through a symlink, onto its
    target), with the mode of the file it replaces or a new file's. A failure midway
    leaves the old file whole and no temp file behind. The folder must exist."""
    write_text_atomically(path, chunks)

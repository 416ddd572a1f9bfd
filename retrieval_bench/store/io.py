"""The one atomic file write of the toolkit: every file it replaces in place (run and
sweep records, checkpoints, the index manifest, the local server's state, the
snapshot blob store, the files a user names with ``--out``) goes through here.

Why atomic: the file is written under a unique temp name in the same folder,
flushed to disk, given its mode, then renamed over the target
(``os.replace``, atomic on one file system). So a reader never sees half a
file, and a crash, a kill or a full disk midway leaves the old file whole; the
temp file is removed on any failure (a hard kill can still leave a
``.<name>.<random>.tmp`` or ``.<name>.<pid>-<thread>-<n>.tmp`` beside it, never a
half target).

Through a symlink the write lands on its target (the link is kept). The mode:
``mode`` when given (exactly, the umask does not apply), else the mode of the
file replaced, else a new file's (0666 less the umask) — a temp file is
created 0600, which would otherwise hide the file from the user's group.

Imports nothing of the toolkit (it sits in the foundation layer:
docs/architecture.md#layers).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["open_atomically", "write_bytes_atomically", "write_text_atomically"]

_SERIAL = itertools.count()
"""Temp names of :func:`write_bytes_atomically`, unique within a process."""


@contextmanager
def open_atomically(
    path: str | os.PathLike[str], *, mode: int | None = None, sync: bool = True
) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; on leaving the block
    without an error it is flushed (and fsync-ed unless ``sync`` is false), given
    its mode and renamed over ``path``. On an error (or Ctrl-C) inside the block
    or while finishing, the temp file is removed, ``path`` is untouched and the
    error is raised. The folder must exist."""
    target = Path(os.path.realpath(path))
    perms = _kept_mode(target) if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.chmod(tmp, perms)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomically(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, sync: bool = True
) -> None:
    """Replace ``path`` with ``data`` atomically, as :func:`open_atomically` does, in
    fewer system calls (the snapshot blob store writes thousands of files): the temp
    name is made unique by process, thread and a counter instead of drawn at random,
    and the mode is set on the open file."""
    target = os.path.realpath(path)
    perms = _kept_mode(Path(target)) if mode is None else mode
    fd, tmp = _new_temp(*os.path.split(target))
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
            os.fchmod(fd, perms)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _new_temp(folder: str, name: str) -> tuple[int, str]:
    """A new file (created 0600) beside ``name`` in ``folder``, named by process, thread
    and a counter; a name a killed process left behind is passed over."""
    for _ in range(100):
        tmp = os.path.join(
            folder, f".{name}.{os.getpid()}-{threading.get_ident()}-{next(_SERIAL)}.tmp"
        )
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp name beside {os.path.join(folder, name)}")


def write_text_atomically(
    path: str | os.PathLike[str],
    text: str | Iterable[str],
    *,
    mode: int | None = None,
    sync: bool = True,
    encoding: str = "utf-8",
) -> None:
    """Replace ``path`` with ``text`` (one string, or chunks written one by one, e.g.
    JSONL lines from a generator) atomically (:func:`open_atomically`); newlines
    are written as given."""
    chunks = [text] if isinstance(text, str) else text
    with open_atomically(path, mode=mode, sync=sync) as fh:
        for chunk in chunks:
            fh.write(chunk.encode(encoding))


def _kept_mode(path: Path) -> int:
    """The mode ``path`` keeps when replaced, or a new file's (0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (setting and
    restoring it would briefly give other threads' new files mode 0666)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask

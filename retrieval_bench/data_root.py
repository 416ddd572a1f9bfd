"""The data root: where a config's data that is not in the repository lives
(docs/configuration.md#data-root).

The bundled configs read the shared benchmark data (the devsets, the SWE-bench
Lite dev tarballs, git bundles of upstream histories) from one folder, the
*data root*, written into their paths as a placeholder::

    questions: ${RBENCH_DATA_ROOT:-../../../shared/data}/devsets/pytest-7.4.0.jsonl

When a config is loaded, ``${RBENCH_DATA_ROOT}`` and ``${RBENCH_DATA_ROOT:-DEFAULT}``
in any string become the data root: ``--data-root DIR`` when given, else
``$RBENCH_DATA_ROOT``, else the placeholder's ``DEFAULT`` (relative to the config's
folder, as the config's other paths are). Without any of them the config is
refused with one line saying how to set it. A dataset file under the data root
that does not exist is refused before any work, naming the root, where that
came from, and how to point at another one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.errors import ConfigError

DATA_ROOT_ENV = "RBENCH_DATA_ROOT"
"""Environment variable naming the data root (``--data-root`` wins over it)."""
_PLACEHOLDER = re.compile(r"\$\{" + DATA_ROOT_ENV + r"(?::-(?P<default>[^}]*))?\}")
HOW = (
    f"set {DATA_ROOT_ENV} or pass --data-root DIR (the folder that holds devsets/, "
    "swebench-lite-dev/ and repos/; README.md#benchmark-data)"
)
"""How to point at the data: the end of every data-root error."""


@dataclass(frozen=True)
class DataRoot:
    """The folder ``${RBENCH_DATA_ROOT}`` stood for, and who chose it."""

    path: Path
    """Absolute."""
    origin: str
    """``--data-root``, ``$RBENCH_DATA_ROOT`` or ``the config's default ../shared/data``."""


def expand_data_root(
    data: dict[str, Any], base_dir: Path, source: str, explicit: Path | None = None
) -> DataRoot | None:
    """Replace the data-root placeholders in every string of ``data`` (in place) and
    return the root they stood for (None when ``data`` has none). ``explicit`` is
    ``--data-root``; relative roots from it or the environment resolve against the
    working directory, a placeholder's default against ``base_dir``."""
    found: list[DataRoot] = []

    def root_for(match: re.Match[str]) -> str:
        root = _choose(match.group("default"), base_dir, source, explicit)
        found.append(root)
        return str(root.path)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(root_for, value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    data.update(walk(data))
    return found[0] if found else None


def _choose(default: str | None, base_dir: Path, source: str, explicit: Path | None) -> DataRoot:
    if explicit is not None:
        return DataRoot(Path(explicit).expanduser().resolve(), "--data-root")
    env = os.environ.get(DATA_ROOT_ENV, "").strip()
    if env:
        return DataRoot(Path(env).expanduser().resolve(), f"${DATA_ROOT_ENV}")
    if default:
        path = Path(default).expanduser()
        where = path if path.is_absolute() else (base_dir / path)
        return DataRoot(where.resolve(), f"the config's default {default}")
    raise ConfigError(f"{source} reads its data from ${{{DATA_ROOT_ENV}}}, which is not set: {HOW}")


def check_data_files(root: DataRoot | None, files: dict[str, Path], source: str) -> None:
    """A :class:`ConfigError` for the first of ``files`` (what → path) that lies under
    ``root`` but does not exist: saying where the data root is, who chose it, and
    how to point at another one."""
    if root is None:
        return
    for what, path in files.items():
        if not path.is_relative_to(root.path) or path.exists():
            continue
        if not root.path.is_dir():
            raise ConfigError(
                f"{source}: {what} {path} is missing: the data root {root.path} "
                f"({root.origin}) does not exist; {HOW}"
            )
        raise ConfigError(
            f"{source}: {what} {path} does not exist in the data root {root.path} "
            f"({root.origin}); {HOW}"
        )

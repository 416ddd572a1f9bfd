"""What the learned stages' model files share (docs/stages.md#learning-to-rank,
docs/stages.md#function-ranker): reading one as JSON, and checking that the stages
it was fitted on are among the stage's inputs, each problem a one-line
:class:`~retrieval_bench.errors.ConfigError` naming the file."""

from __future__ import annotations

import json
import stat
from collections.abc import Collection, Sequence
from pathlib import Path, PurePath
from typing import Any

from retrieval_bench.errors import ConfigError


def path_as_text(model_file: object) -> object:
    """A ``model_file`` parameter given as a path object, as text (the parameters'
    ``mode="before"`` validator of ``ltr`` and ``function-ranker``)."""
    return str(model_file) if isinstance(model_file, PurePath) else model_file


def file_key(path: str | Path, kind: str, command: str) -> tuple[str, int, int]:
    """(resolved path, modification time, size) of the model file ``path``: the key a
    process reads it once under while it is unchanged."""
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        raise ConfigError(
            f"{kind}: model file {path} not found (write one with rbench {command})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{kind}: cannot read model file {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{kind}: model file {path} is a folder, not a file")
    return str(Path(path).resolve()), st.st_mtime_ns, st.st_size


def read_model_json(path: str, kind: str, command: str) -> Any:
    """The decoded JSON of the model file ``path`` of stage ``kind`` (written by
    ``rbench <command>``)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{kind}: model file {path} is not UTF-8 text (not a model file "
                          f"written by rbench {command})") from None  # fmt: skip
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{kind}: model file {path} is not JSON ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{kind}: cannot read model file {path}: {exc.strerror or exc}") from None


def check_sources(
    kind: str, path: object, sources: Sequence[str], inputs: Collection[str] | None
) -> None:
    """ConfigError when a stage's ``inputs`` lack a stage its model was fitted on."""
    if inputs is None:
        return
    missing = [s for s in sources if s not in inputs]
    if missing:
        raise ConfigError(
            f"{kind}: model file {path} was fitted on stages {list(sources)}, but {missing} "
            f"{'is' if len(missing) == 1 else 'are'} not among this stage's inputs "
            f"{list(inputs)} (add them, with the parameters they had, or re-fit)"
        )

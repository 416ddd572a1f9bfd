"""Reading a user's YAML or TOML file into a mapping, every failure one line
(docs/architecture.md#bad-input-and-failures).

Configs, sweep configs and metric files all come through :func:`read_mapping`:

* bytes that are not UTF-8 are a :class:`ConfigError` naming the file and the
  byte, not a ``UnicodeDecodeError`` traceback;
* a YAML syntax error is ``file:line:column: not valid YAML: problem`` instead of
  PyYAML's multi-line message with a caret drawing;
* a key given twice in one YAML mapping is refused (:class:`UniqueKeyLoader`):
  PyYAML's ``safe_load`` keeps the last silently, so a second ``retrievers:``
  would quietly replace the first. TOML parsers refuse duplicates themselves.

It imports nothing of :mod:`retrieval_bench.config`, so any module may read a
user's YAML with :func:`load_yaml`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode
from yaml.reader import ReaderError

from retrieval_bench.errors import ConfigError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names one key twice; the mark is the second occurrence."""


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with a key given twice.

    Only the keys written in the mapping itself count: keys merged in with
    ``<<: *anchor`` may be overridden, as YAML's merge key intends.
    """

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=False)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the constructor below says so
                continue
            if first is not None:
                problem = f"duplicate key {key_node.value!r} (first at line {first + 1}): keep one"
                raise DuplicateKeyError(problem=problem, problem_mark=key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` with duplicate keys refused (:class:`UniqueKeyLoader`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: no Python objects


def yaml_error_line(source: str, text: str, exc: yaml.YAMLError) -> str:
    """PyYAML's error as ``source:line:column: not valid YAML: problem (context)``."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}"
        problem = exc.problem or "syntax error"
        ctx = exc.context_mark
        if exc.context and ctx is not None and (ctx.line, ctx.column) != (mark.line, mark.column):
            problem += f" ({exc.context} at line {ctx.line + 1}, column {ctx.column + 1})"
        elif exc.context:
            problem += f" ({exc.context})"
        return f"{where}: not valid YAML: {problem}"
    if isinstance(exc, ReaderError):  # a control character: a position, not a mark
        pos = max(0, min(exc.position, len(text)))
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        first = str(exc).splitlines()[0]
        return f"{source}:{line}:{column}: not valid YAML: {first}"
    return f"{source}: not valid YAML: {' '.join(str(exc).split())}"


def read_text(path: Path) -> str:
    """The file's text; unreadable or non-UTF-8 bytes raise a one-line :class:`ConfigError`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark is fine
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, "
            f"offset {exc.start}): re-save it as UTF-8"
        ) from None


def read_mapping(path: Path, what: str, wanted: str, shape: str) -> dict[str, Any]:
    """The top-level mapping of a YAML (``.yaml``/``.yml``) or TOML (``.toml``) file;
    a missing or unreadable file, non-UTF-8 bytes, bad syntax, a duplicate key or a
    non-mapping raise :class:`ConfigError` naming it, in one line."""
    if not path.is_file():
        raise ConfigError(f"{path}: {what} not found; pass a .yaml or .toml {wanted}")
    text = read_text(path)
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error_line(str(path), text, exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping {shape}")
    return data

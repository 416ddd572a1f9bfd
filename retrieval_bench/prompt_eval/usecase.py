"""Use cases: what a prompt is for and how its answers are judged
(docs/architecture.md#prompt-evaluation).

A use case is a Python class with:

- ``variables``: the prompt variable names (``{notes}`` in a template);
- ``fields``: the ground-truth field names;
- ``parse(raw)``: the model's text → JSON (default: the first JSON value in it);
- ``process(data)``: JSON → the typed response; raises ``ValueError`` on
  bad data. The same function validates ground-truth rows (which must also
  give every field a value, while a model's response may leave one ``None``:
  that field then simply does not match), and may add computed fields that
  ``evaluate`` uses;
- ``evaluate(response, truth)``: per-field ``bool`` (matches the ground
  truth), optionally extra numeric fields (TP, FP, FN...);
- ``sort(results)``: prompt results best → worst (default: most matches over
  the ground-truth fields). The same rule decides "better/worse than the
  baseline" (first in the sort = better);
- ``row_score(evaluation)``: a per-row number in [0, 1] for the paired
  significance test (default: share of ground-truth fields matched).

Registry: ``@register_use_case`` on the class; :func:`get_use_case` takes a
registered name, a ``package.module:Class`` reference or a
``path/to/file.py:Class`` reference, so a user's own use case runs without
being installed (an explicit act of the command line; the web UI looks names up
with :func:`registered_use_case`, which never imports anything). Third-party
packages may add entry points in the ``retrieval_bench.use_cases`` group.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

from retrieval_bench.prompt_eval.errors import InvalidRowError, UnknownUseCaseError
from retrieval_bench.prompt_eval.records import EvalValue, PromptResult, Row

_BUILTIN_MODULES = (
    "retrieval_bench.prompt_eval.examples.action_items",
    "retrieval_bench.prompt_eval.examples.code_questions",
)
_ENTRY_POINT_GROUP = "retrieval_bench.use_cases"
_REGISTRY: dict[str, type[UseCase]] = {}
_loaded = False


@dataclass(frozen=True)
class ExampleData:
    """Bundled starting data of a use case: a rows file and a prompts file
    (any format :mod:`retrieval_bench.prompt_eval.io` reads)."""

    rows: Path
    prompts: Path
    baseline: str | None = None


class UseCase:
    """Base class of a use case; see the module docstring. Subclasses set the
    class attributes and override ``process`` (and usually ``evaluate``)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    variables: ClassVar[tuple[str, ...]] = ()
    fields: ClassVar[tuple[str, ...]] = ()
    examples: ClassVar[ExampleData | None] = None

    # ------------------------------------------------------------ pipeline
    def parse(self, raw: str) -> Any:
        """The model's raw text → JSON; raise ``ValueError`` when there is none."""
        return extract_json(raw)

    def process(self, data: Any) -> dict[str, Any]:
        """JSON → typed response (also validates ground-truth rows)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        missing = [f for f in self.fields if f not in data]
        if missing:
            raise ValueError(f"missing field(s) {', '.join(missing)}")
        return {f: data[f] for f in self.fields}

    def evaluate(
        self, response: Mapping[str, Any], truth: Mapping[str, Any]
    ) -> dict[str, EvalValue]:
        """Per ground-truth field: does the response match? Extras allowed."""
        return {f: response.get(f) == truth.get(f) for f in self.fields}

    def row_score(self, evaluation: Mapping[str, EvalValue]) -> float:
        """Share of ground-truth fields matched (0..1)."""
        if not self.fields:
            return 0.0
        return sum(bool(evaluation.get(f)) for f in self.fields) / len(self.fields)

    def columns(self) -> tuple[str, ...]:
        """Count columns of the results table, in order (fields, then extras)."""
        return self.fields

    def sort(self, results: Sequence[PromptResult]) -> list[PromptResult]:
        """Best → worst; default: most ground-truth field matches (stable)."""
        return sorted(results, key=lambda r: -sum(r.counts.get(f, 0) for f in self.fields))

    # ------------------------------------------------------------- helpers
    def validate_row(self, row: Row) -> dict[str, Any]:
        """Check a ground-truth row; return its processed truth or raise InvalidRowError."""
        where = f"use case {self.name}: row {row.id!r}"
        if not str(row.id).strip():
            raise InvalidRowError(
                f"use case {self.name}: a row has an empty id; give every row one"
            )
        missing = [v for v in self.variables if v not in row.variables]
        unknown = [v for v in row.variables if v not in self.variables]
        if missing:
            raise InvalidRowError(f"{where}: missing variable(s) {', '.join(missing)}")
        if unknown:
            raise InvalidRowError(
                f"{where}: unknown variable(s) {', '.join(unknown)}; "
                f"this use case has {', '.join(self.variables)}"
            )
        bad = [v for v, x in row.variables.items() if not isinstance(x, str)]
        if bad:
            raise InvalidRowError(f"{where}: variable(s) {', '.join(bad)} must be text")
        extra = [f for f in row.expected if f not in self.fields]
        if extra:
            raise InvalidRowError(
                f"{where}: unknown ground-truth field(s) {', '.join(extra)}; "
                f"this use case has {', '.join(self.fields)}"
            )
        try:
            truth = self.process(dict(row.expected))
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidRowError(f"{where}: ground truth fails validation: {exc}") from exc
        unset = [f for f in self.fields if truth.get(f) is None]
        if unset:
            raise InvalidRowError(f"{where}: ground truth has no value for {', '.join(unset)}")
        return truth


# ------------------------------------------------------------------ JSON
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(raw: str) -> Any:
    """The first JSON object or array in a model's text (code fences allowed)."""
    text = raw.strip()
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text, i)[0]
            except ValueError:
                continue
    raise ValueError(f"no JSON in model output: {text[:80]!r}")


# -------------------------------------------------------------- registry
def register_use_case(cls: type[UseCase]) -> type[UseCase]:
    """Class decorator: make a use case available under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"use case class {cls.__name__} has no name")
    if not cls.variables or not cls.fields:
        raise ValueError(f"use case {cls.name} must declare variables and fields")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    for ep in entry_points(group=_ENTRY_POINT_GROUP):
        loaded = ep.load()
        if isinstance(loaded, type) and issubclass(loaded, UseCase):
            _REGISTRY.setdefault(ep.name, loaded)


def use_case_names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def _from_reference(ref: str) -> type[UseCase]:
    target, _, attr = ref.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise UnknownUseCaseError(f"use case file {target} does not exist")
        spec = importlib.util.spec_from_file_location(f"rbench_usecase_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise UnknownUseCaseError(f"cannot import use case file {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise UnknownUseCaseError(f"cannot import use case module {target}: {exc}") from exc
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, UseCase)):
        raise UnknownUseCaseError(f"{ref} is not a UseCase subclass")
    return cls


def registered_use_case(name: str) -> UseCase:
    """A use case by registered name only (built-in, ``@register_use_case`` or an
    entry point): the web UI's lookup. Unlike :func:`get_use_case` it never imports a
    module or runs a file the caller names, so a request cannot make the server run
    code (docs/architecture.md#web-ui-security); an unknown name is
    :class:`UnknownUseCaseError` (a 404 on the web)."""
    _load_builtins()
    cls = _REGISTRY.get(name)
    if cls is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownUseCaseError(f"unknown use case {name!r}; registered: {known}")
    return cls()


def get_use_case(name: str | UseCase | type[UseCase]) -> UseCase:
    """A use case instance by registered name or ``module:Class`` / ``file.py:Class``."""
    if isinstance(name, UseCase):
        return name
    if isinstance(name, type):
        return name()
    if ":" in name:
        return _from_reference(name)()
    _load_builtins()
    cls = _REGISTRY.get(name)
    if cls is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownUseCaseError(
            f"unknown use case {name!r}; registered: {known} "
            "(or pass package.module:Class / path/to/file.py:Class)"
        )
    return cls()

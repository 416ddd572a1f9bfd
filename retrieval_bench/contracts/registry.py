"""Name → factory registries, one typed :class:`Registry` per pluggable kind.

Adding a strategy is one new module plus one registration; no if/elif
dispatch anywhere (see docs/extending.md)::

    from retrieval_bench.contracts.registry import RETRIEVERS
    from retrieval_bench.contracts.retriever import Retriever

    @RETRIEVERS.register("path-match")
    class PathMatch(Retriever): ...

    RETRIEVERS.create("path-match", min_len=4)   # a Retriever, as mypy knows

Every entry is a class deriving from the kind's base (:class:`Chunker`,
:class:`Retriever`, :class:`Fusion`, :class:`Reranker`, :class:`MetricBase`),
so the harness reads a stage's declared capabilities (``needs_llm``,
``uses_vector_index``, ``trainable``) from :meth:`Registry.type_of` before it
builds anything. A plain function factory is registered only when wrapped,
with the class it returns named: ``register(name, returns=Rouge)``.

Built-in modules are imported on the first lookup of their kind (so
``import retrieval_bench`` stays cheap); other packages add entries through
the entry-point groups ``retrieval_bench.<kind>`` (e.g.
``retrieval_bench.retrievers``), which never replace a built-in name. Tests
use :meth:`Registry.registered` or :meth:`Registry.scoped`, which undo their
changes on exit. The kind-string functions (``register("retrievers", name)``,
``create("fusions", name, ...)``) remain as shorthands for the registries.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from importlib.metadata import entry_points
from typing import Any, Generic, Literal, TypeVar, cast, overload

from retrieval_bench.contracts.answer_metric import MetricBase
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.contracts.fusion import Fusion
from retrieval_bench.contracts.params import NO_SERVICES, Configurable, StageParams, StageServices
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.errors import ConfigError

SERVICE_KEYWORDS = ("llm", "facts_cache", "embedding_cache", "snapshot")
"""Keywords :meth:`Registry.create` reads as :class:`StageServices`, not parameters."""

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

Kind = Literal["chunkers", "retrievers", "fusions", "rerankers", "metrics"]
KINDS: tuple[Kind, ...] = ("chunkers", "retrievers", "fusions", "rerankers", "metrics")


class Registry(Generic[T]):
    """The factories of one kind, by name; :meth:`create` returns a ``T``.

    ``base`` is the kind's base class (``T`` itself; passed as a plain
    ``type`` because it is abstract). ``builtins`` are the modules whose
    ``@register`` lines fill the registry, imported on the first lookup.
    """

    def __init__(self, kind: str, base: type, builtins: str | None = None) -> None:
        self.kind = kind
        self.base = base
        self.noun = kind.removesuffix("s")
        self._builtins = builtins
        self._factories: dict[str, Callable[..., T]] = {}
        self._types: dict[str, type[T]] = {}
        self._broken: dict[str, str] = {}
        """Entry points that could not be used: name → why (raised on lookup)."""
        self._loaded = False
        self._loading = False

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.base.__name__})"

    # -- registering ---------------------------------------------------------------
    def register(self, name: str, *, returns: type | None = None) -> Callable[[F], F]:
        """Decorator adding a class (a concrete subclass of the base) under ``name``.

        A function factory needs ``returns``: the base subclass it builds, whose
        flags describe it. A later registration of a name replaces the earlier
        one, except that built-in modules never replace an entry made before
        they were loaded.
        """

        def deco(factory: F) -> F:
            self._add(name, factory, returns)
            return factory

        return deco

    def unregister(self, name: str) -> None:
        """Remove ``name`` (KeyError when it is not registered)."""
        self._load()
        if name not in self._factories:
            raise KeyError(f"no {self.noun} {name!r} is registered")
        del self._factories[name], self._types[name]

    @contextmanager
    def registered(
        self, name: str, factory: Callable[..., T], *, returns: type | None = None
    ) -> Iterator[Callable[..., T]]:
        """``factory`` registered under ``name`` inside the block; whatever was there
        before (or nothing) is restored on exit."""
        with self.scoped():
            self._add(name, factory, returns)
            yield factory

    @contextmanager
    def scoped(self, keep: Iterable[str] | None = None) -> Iterator[Registry[T]]:
        """Inside the block, registrations and removals are undone on exit.

        ``keep``: start from only these entries (the built-ins and entry points
        are loaded first; an unknown name is a KeyError); None keeps them all.
        """
        self._load()
        saved = dict(self._factories), dict(self._types), dict(self._broken)
        try:
            if keep is not None:
                wanted = list(keep)
                unknown = [n for n in wanted if n not in self._factories]
                if unknown:
                    raise KeyError(f"no {self.noun} registered as {', '.join(unknown)}")
                self._factories = {n: self._factories[n] for n in wanted}
                self._types = {n: self._types[n] for n in wanted}
                self._broken = {}
            yield self
        finally:
            self._factories, self._types, self._broken = saved

    def _add(self, name: str, factory: object, returns: type | None) -> None:
        made = self._check(name, factory, returns)
        if self._loading and name in self._factories:
            return  # a built-in module never replaces an earlier explicit registration
        self._factories[name] = cast("Callable[..., T]", factory)
        self._types[name] = made
        self._broken.pop(name, None)

    def _check(self, name: str, factory: object, returns: type | None) -> type[T]:
        """The class whose flags describe ``factory``; TypeError when it is not a
        concrete subclass of the base (or a function with such a ``returns``)."""
        where = f"{self.noun} {name!r}"
        base = self.base.__name__
        if inspect.isclass(factory):
            if returns is not None and returns is not factory:
                raise TypeError(f"{where}: returns= is only for function factories")
            made: type = factory
        elif callable(factory):
            if returns is None:
                raise TypeError(
                    f"{where}: a function factory is registered with returns=<the {base} "
                    f"subclass it builds>; better, register the class itself"
                )
            made = returns
        else:
            raise TypeError(f"{where}: {factory!r} is neither a class nor a function")
        if not (inspect.isclass(made) and issubclass(made, self.base)):
            raise TypeError(f"{where}: {made!r} is not a subclass of {base}")
        if made is factory and inspect.isabstract(made):
            missing = ", ".join(sorted(getattr(made, "__abstractmethods__", ())))
            raise TypeError(f"{where}: {made.__name__} is abstract; implement {missing}")
        return cast("type[T]", made)

    # -- loading -------------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = self._loading = True
        try:
            if self._builtins is not None:
                module, _, function = self._builtins.partition(":")
                table: dict[str, type] = getattr(importlib.import_module(module), function)()
                for name, made in table.items():
                    self._add(name, made, None)
        finally:
            self._loading = False
        for ep in entry_points(group=f"retrieval_bench.{self.kind}"):
            if ep.name in self._factories:
                continue  # never replaces a built-in (or an earlier registration)
            try:
                self._add(ep.name, ep.load(), None)
            except Exception as exc:  # noqa: BLE001 - a broken plugin fails when it is named
                self._broken[ep.name] = (
                    f"the entry point {ep.value} of group retrieval_bench.{self.kind} "
                    f"cannot be used: {type(exc).__name__}: {exc}"
                )

    # -- looking up ----------------------------------------------------------------
    def names(self) -> list[str]:
        """The registered names, sorted."""
        self._load()
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._factories

    def get(self, name: str) -> Callable[..., T]:
        """The factory registered as ``name`` (a class, or a wrapped function)."""
        self._load()
        factory = self._factories.get(name)
        if factory is not None:
            return factory
        if name in self._broken:
            raise ConfigError(f"{self.noun} {name!r}: {self._broken[name]}")
        raise ConfigError(f"unknown {self.noun} {name!r}; choose one of: {', '.join(self.names())}")

    def type_of(self, name: str) -> type[T]:
        """The class of what ``name`` builds: its flags are the stage's capabilities."""
        self.get(name)
        return self._types[name]

    def params_of(self, name: str) -> type[StageParams]:
        """The ``Params`` class of ``name`` (what its config entry may set)."""
        made = self.type_of(name)
        params: type[StageParams] = getattr(made, "Params", StageParams)
        return params

    def create(
        self,
        name: str,
        params: StageParams | Mapping[str, Any] | None = None,
        services: StageServices = NO_SERVICES,
        /,
        **values: Any,
    ) -> T:
        """Build ``name`` from ``params`` (its ``Params``, or a mapping read as one,
        with ``values`` on top) and the harness's ``services``; a bad parameter, or a
        factory that builds something other than its declared class, is a
        :class:`ConfigError` naming the stage (``retriever 'bm25': k1: ...``)."""
        factory = self.get(name)
        expected = self._types[name]
        handed = {k: values.pop(k) for k in SERVICE_KEYWORDS if k in values}
        if handed:  # ``create(..., llm=client)``: a service given as a keyword
            services = replace(services, **handed)
        try:
            typed = self.params_of(name).of(params, **values)
        except ConfigError as exc:
            raise ConfigError(f"{self.noun} {name!r}: {exc}") from None
        if factory is expected and issubclass(expected, Configurable):
            made: object = expected.from_params(typed, services)
        else:  # a function factory registered with returns=: keyword parameters
            try:
                made = factory(**typed.given())
            except TypeError as exc:
                raise ConfigError(f"{self.noun} {name!r}: bad parameters: {exc}") from exc
        if not isinstance(made, expected):
            raise ConfigError(
                f"{self.noun} {name!r}: its factory made a {type(made).__name__}, "
                f"not a {expected.__name__}"
            )
        return made


BUILTINS = "retrieval_bench.builtin_stages"
"""The one module that names every built-in stage (one function per kind)."""

CHUNKERS: Registry[Chunker] = Registry("chunkers", Chunker, f"{BUILTINS}:chunkers")
RETRIEVERS: Registry[Retriever] = Registry("retrievers", Retriever, f"{BUILTINS}:retrievers")
FUSIONS: Registry[Fusion] = Registry("fusions", Fusion, f"{BUILTINS}:fusions")
RERANKERS: Registry[Reranker] = Registry("rerankers", Reranker, f"{BUILTINS}:rerankers")
METRICS: Registry[MetricBase] = Registry("metrics", MetricBase, f"{BUILTINS}:metrics")
REGISTRIES: dict[str, Registry[Any]] = {
    "chunkers": CHUNKERS,
    "retrievers": RETRIEVERS,
    "fusions": FUSIONS,
    "rerankers": RERANKERS,
    "metrics": METRICS,
}


# -- the kind-string shorthands ------------------------------------------------------
@overload
def registry_for(kind: Literal["chunkers"]) -> Registry[Chunker]: ...
@overload
def registry_for(kind: Literal["retrievers"]) -> Registry[Retriever]: ...
@overload
def registry_for(kind: Literal["fusions"]) -> Registry[Fusion]: ...
@overload
def registry_for(kind: Literal["rerankers"]) -> Registry[Reranker]: ...
@overload
def registry_for(kind: Literal["metrics"]) -> Registry[MetricBase]: ...
@overload
def registry_for(kind: str) -> Registry[Any]: ...
def registry_for(kind: str) -> Registry[Any]:
    """The registry of ``kind`` (ValueError for an unknown kind)."""
    try:
        return REGISTRIES[kind]
    except KeyError:
        raise ValueError(f"unknown registry kind {kind!r}; expected one of {KINDS}") from None


def register(kind: Kind, name: str, *, returns: type | None = None) -> Callable[[F], F]:
    """``registry_for(kind).register(name)``."""
    return registry_for(kind).register(name, returns=returns)


def names(kind: Kind) -> list[str]:
    return registry_for(kind).names()


def get(kind: Kind, name: str) -> Callable[..., Any]:
    return registry_for(kind).get(name)


@overload
def create(kind: Literal["chunkers"], name: str, /, **params: Any) -> Chunker: ...
@overload
def create(kind: Literal["retrievers"], name: str, /, **params: Any) -> Retriever: ...
@overload
def create(kind: Literal["fusions"], name: str, /, **params: Any) -> Fusion: ...
@overload
def create(kind: Literal["rerankers"], name: str, /, **params: Any) -> Reranker: ...
@overload
def create(kind: Literal["metrics"], name: str, /, **params: Any) -> MetricBase: ...
def create(kind: Kind, name: str, /, **params: Any) -> object:
    """``registry_for(kind).create(name, **params)``."""
    made: object = registry_for(kind).create(name, **params)
    return made

"""What a configured stage is made from: its typed ``Params`` and the harness's services.

Every registered class (chunker, retriever, fusion, reranker, answer metric)
declares its config parameters once, as a nested ``class Params(StageParams)``:
a frozen pydantic model that refuses an unknown key. The config is checked
against it before any work (an unknown or mistyped key is a one-line error
naming the stage and the key), and the same object builds the stage::

    class BM25Retriever(Retriever):
        class Params(StageParams):
            k1: float = 1.5
            b: float = Field(default=0.75, ge=0, le=1)

        def __init__(self, params: BM25Retriever.Params | None = None, /, **values: Any):
            p = self.params = self.Params.of(params, **values)

so ``BM25Retriever(k1=1.2)`` and ``RETRIEVERS.create("bm25", {"k1": 1.2})`` build
the same thing, with the same checks. A stage that wraps another nests its
``Params`` (``bm25-files``' ``Params`` derives from ``bm25``'s) instead of
forwarding each parameter by hand.

What the harness supplies rather than the config — the run's LLM client, the
embedding and code-facts cache folders, the snapshot the corpus was made from —
travels in a :class:`StageServices`; :meth:`Configurable.from_params` hands each
stage the services its class declares it uses (``needs_llm``,
``uses_embedding_cache``, ``uses_facts_cache``, ``uses_snapshot``:
docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from retrieval_bench.errors import ConfigError

if TYPE_CHECKING:
    from retrieval_bench.snapshot import Snapshot


class StageParams(BaseModel):
    """Base of every stage's ``Params``: typed, frozen, no unknown key.

    A stage without parameters keeps this class itself (it accepts only ``{}``).
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True, protected_namespaces=()
    )

    @classmethod
    def of(cls, params: BaseModel | Mapping[str, Any] | None = None, /, **values: Any) -> Self:
        """``params`` (a ``Params`` or a mapping) read as this class, with ``values``
        on top; a bad key or value is a :class:`ConfigError` naming it
        (``k1: Input should be a valid number``, ``unknown parameter 'krrf'; valid
        parameters: ...``)."""
        if isinstance(params, cls) and not values:
            return params
        data: dict[str, Any] = {}
        if isinstance(params, BaseModel):
            data = {k: getattr(params, k) for k in params.model_fields_set}
        elif params is not None:
            data = dict(params)
        data.update(values)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(params_error(cls, exc)) from None

    @classmethod
    def names(cls) -> list[str]:
        """The parameter names, sorted."""
        return sorted(cls.model_fields)

    def given(self) -> dict[str, Any]:
        """The parameters set explicitly (not left at their defaults), as given."""
        return {k: getattr(self, k) for k in sorted(self.model_fields_set)}


def params_error(
    params: type[StageParams],
    exc: ValidationError,
    where: str = "",
    extra: frozenset[str] = frozenset(),
    of: str = "",
) -> str:
    """One line for ``exc``, raised by ``params``: an unknown key names the valid
    ones (``extra``: keys the config entry may carry besides the parameters, such
    as ``inputs``; ``of``: whose parameters, ``retriever 'bm25'``); any other error
    its location and pydantic's message. ``where`` (``retrievers.1``) is prepended
    to the location."""
    errors = exc.errors()
    unknown = [".".join(str(p) for p in e["loc"]) for e in errors if e["type"] == "extra_forbidden"]
    prefix = f"{where}." if where else ""
    if unknown:
        names = {*params.model_fields, *extra, "id"} if where else set(params.model_fields)
        valid = ", ".join(sorted(names))
        noun = "parameter" if len(unknown) == 1 else "parameters"
        bad = ", ".join(repr(u) for u in unknown)
        whose = f" of {of}" if of else ""
        valid = valid or "(none)"
        return f"{prefix}{unknown[0]}: unknown {noun} {bad}{whose}; valid parameters: {valid}"
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(value)"
    msg = str(first["msg"]).removeprefix("Value error, ")
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{prefix}{loc}: {msg}{more}"


@dataclass(frozen=True)
class StageServices:
    """What the harness gives a stage besides its parameters (module doc)."""

    llm: Any = None
    """The run's LLM client (a lazy handle: the model server starts on the first call),
    for stages declaring ``needs_llm``."""
    embedding_cache: str | None = None
    """The embedding cache folder, for stages declaring ``uses_embedding_cache``
    (a ``cache_dir`` in the stage's own parameters wins)."""
    facts_cache: str | None = None
    """The code-facts cache folder, for stages declaring ``uses_facts_cache``."""
    snapshot: Snapshot | None = None
    """The snapshot the stage's corpus was made from (its kind, source, commit and git
    repository), for stages declaring ``uses_snapshot``."""


NO_SERVICES = StageServices()


class Configurable:
    """Mixin of every registered kind: a ``Params`` class and how to build from it."""

    Params: ClassVar[type[StageParams]] = StageParams
    """The config parameters (module doc); the base accepts none."""

    needs_llm: ClassVar[bool] = False
    """The constructor takes an ``llm`` keyword: the run's shared LLM client."""
    uses_embedding_cache: ClassVar[bool] = False
    """``Params`` has a ``cache_dir``; the harness fills it with the run's embedding
    cache folder when the config leaves it unset."""
    uses_facts_cache: ClassVar[bool] = False
    """The constructor takes a ``facts_cache`` keyword: the code-facts cache folder."""
    uses_snapshot: ClassVar[bool] = False
    """The constructor takes a ``snapshot`` keyword: the
    :class:`~retrieval_bench.snapshot.Snapshot` its corpus was made from (``history``
    reads the commit's log)."""

    @classmethod
    def from_params(cls, params: StageParams, services: StageServices = NO_SERVICES) -> Self:
        """Build the stage from validated ``params`` and the ``services`` its class
        declares it uses (module doc)."""
        keywords: dict[str, Any] = {}
        if cls.needs_llm and services.llm is not None:
            keywords["llm"] = services.llm
        if cls.uses_facts_cache and services.facts_cache is not None:
            keywords["facts_cache"] = services.facts_cache
        if cls.uses_snapshot and services.snapshot is not None:
            keywords["snapshot"] = services.snapshot
        cache = services.embedding_cache
        if (
            cls.uses_embedding_cache
            and cache is not None
            and getattr(params, "cache_dir", 0) is None
        ):
            params = params.model_copy(update={"cache_dir": cache})
        if cls.Params is StageParams:  # no parameters: a constructor that takes none
            return cls(**keywords)
        return cls(params, **keywords)  # type: ignore[call-arg]

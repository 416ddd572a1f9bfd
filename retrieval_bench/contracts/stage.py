"""What every pipeline stage (retriever, fusion, reranker) declares and reports.

A stage's capabilities are class attributes, so the harness reads them from
the registered class before it builds anything (whether the run needs an LLM
client, a vector index, a train split); its per-query side outputs are
instance attributes that the base ``__init__`` sets up empty. The kinds
themselves are :class:`~retrieval_bench.contracts.retriever.Retriever`,
:class:`~retrieval_bench.contracts.fusion.Fusion` and
:class:`~retrieval_bench.contracts.reranker.Reranker` (see docs/extending.md).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from retrieval_bench.contracts.params import Configurable

F = TypeVar("F", bound=Callable[..., Any])
Ranks = Literal["files", "chunks"]
"""What a stage's run ranks: ``files`` (``file:<path>`` ids only, as ``bm25-files``) or
``chunks`` (chunk or entity ids); None where only the run itself can tell."""


class Stage(Configurable, ABC):
    """Base of the retriever, fusion and reranker contracts.

    Subclasses that define ``__init__`` call ``super().__init__()``, which
    sets up :attr:`failures` and :attr:`artifacts`.
    """

    name: str
    """The stage's default run name (the harness names each run by its config label)."""

    needs_llm: ClassVar[bool] = False
    """The constructor takes an ``llm`` keyword: the run's shared LLM client (a lazy
    handle). Whether a *configured* stage calls the model is
    :meth:`needs_llm_for` its parameters: the run makes a client (and starts the
    local model server) only when some configured stage says so."""

    ranks: ClassVar[Ranks | None] = None
    """What the stage's run ranks whatever its parameters and inputs: ``files`` for
    the file rankers (``bm25-files``, ``ltr``, ``code-graph``); None when that depends
    on them (:meth:`ranks_for`)."""

    failures: dict[str, str]
    """Query id → why this stage could not serve it (after its last call);
    stored with the run."""
    artifacts: dict[str, Any]
    """Query id → what the stage produced besides scores (a HyDE snippet, the
    keywords asked for, a reranker's verdicts); stored for the drill-down."""

    def __init__(self) -> None:
        self.failures = {}
        self.artifacts = {}

    @classmethod
    def needs_llm_for(cls, params: Mapping[str, Any]) -> bool:
        """Whether the stage configured with ``params`` (its config entry's
        parameters) calls the model. Default: :attr:`needs_llm`. A stage that calls
        it only in some configurations says which (``exact``: only ``terms: llm``),
        so other runs start no model server; overriding it without declaring
        ``needs_llm = True`` is a :class:`TypeError` (it would never get the model)."""
        return cls.needs_llm

    @classmethod
    def check_inputs(
        cls, params: Mapping[str, Any], searched: Collection[str], known: Collection[str]
    ) -> None:
        """Check, once per run and before any work, the inputs a configured stage
        reads (``params``: its config entry's parameters) against the run's question
        ids (``searched``: the questions it will search; ``known``: every row of the
        datasets); raise an :class:`~retrieval_bench.errors.RBenchError` saying what
        is wrong. A stage that fails every query scores 0 under a run that still
        says ``done``, so a bad input file must stop the run instead
        (``external``, docs/stages.md#external). A fusion's or reranker's ``params``
        carry its ``inputs`` resolved (the default filled in), so a model file can be
        checked against them (``ltr``). Default: nothing to check."""
        return None

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks | None:
        """What the run of the stage configured with ``params`` ranks, given what its
        inputs' runs rank (in the order it reads them): read when the config is checked,
        before any work, by the stages that need their inputs in given roles
        (:meth:`check_config`). Default :attr:`ranks`; where that is None, the kinds
        say what their contract promises (a retriever ranks chunks, a reranker its
        input's ids, a fusion files when its inputs are lifted to files)."""
        return cls.ranks

    @classmethod
    def check_config(
        cls, params: Mapping[str, Any], inputs: Sequence[tuple[str, Ranks | None]]
    ) -> None:
        """Check, when the config is checked and before any work, the values of the
        configured stage's parameters and the roles of its inputs (``inputs``: each
        input's label and what it ranks, :meth:`ranks_for`); raise an
        :class:`~retrieval_bench.errors.RBenchError`. A value the constructor would
        reject fails every query at run time under a run that still says ``done``, so
        a stage that checks values in ``__init__`` repeats the check here
        (``hierarchical``: two inputs, files then chunks, ``per_file`` >= 1). Default:
        nothing to check."""
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind that can be trained (it has a ``trainable`` flag) must declare the
        flag and implement ``fit`` together: the harness trains exactly the stages
        that declare ``trainable = True``, so either one alone is a mistake. Likewise
        a stage that says some configurations call the model (``needs_llm_for``)
        must declare ``needs_llm``, or the harness would never pass it the client."""
        super().__init_subclass__(**kwargs)
        default = Stage.__dict__["needs_llm_for"].__func__
        if not cls.needs_llm and getattr(cls.needs_llm_for, "__func__", None) is not default:
            raise TypeError(
                f"{cls.__qualname__} overrides needs_llm_for() but does not declare "
                "needs_llm = True (it would never be given the model)"
            )
        trainable = getattr(cls, "trainable", None)
        if trainable is None:  # a kind the harness never trains (rerankers)
            return
        implemented = not getattr(getattr(cls, "fit", None), "_untrained_default", False)
        if trainable and not implemented:
            raise TypeError(f"{cls.__qualname__} declares trainable = True but has no fit()")
        if implemented and not trainable:
            raise TypeError(
                f"{cls.__qualname__} implements fit() but does not declare trainable = True "
                "(the harness trains only the stages that declare it)"
            )


def untrained_default(fit: F) -> F:
    """Marks a kind's default ``fit`` (it raises): a subclass that keeps it is not trainable."""
    fit._untrained_default = True  # type: ignore[attr-defined]
    return fit

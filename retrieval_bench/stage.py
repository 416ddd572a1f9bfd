"""What every pipeline stage (retriever, fusion, reranker) declares and reports.

A stage's capabilities are class attributes, so the harness reads them from
the registered class before it builds anything (whether the run needs an LLM
client, a vector index, a train split); its per-query side outputs are
instance attributes that the base ``__init__`` sets up empty. The kinds
themselves are :class:`~retrieval_bench.retrieval.base.Retriever`,
:class:`~retrieval_bench.fusion.base.Fusion` and
:class:`~retrieval_bench.reranking.base.Reranker` (see docs/extending.md).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class Stage(ABC):
    """Base of the retriever, fusion and reranker contracts.

    Subclasses that define ``__init__`` call ``super().__init__()``, which
    sets up :attr:`failures` and :attr:`artifacts`.
    """

    name: str
    """The stage's default run name (the harness names each run by its config label)."""

    needs_llm: ClassVar[bool] = False
    """The factory takes an ``llm`` keyword: the run's shared LLM client. It is a
    lazy handle, so a stage that never calls it (``exact`` without ``terms: llm``)
    starts no model server."""

    uses_embedding_cache: ClassVar[bool] = False
    """The factory takes a ``cache_dir`` keyword: the folder of the content-addressed
    embedding cache. The harness passes the run's workspace's
    :attr:`~retrieval_bench.workspace.Workspace.embeddings_uri` (so ``$RBENCH_CACHE``
    still wins over ``<workspace>/cache``) unless the stage's config names one."""

    failures: dict[str, str]
    """Query id → why this stage could not serve it (after its last call);
    stored with the run."""
    artifacts: dict[str, Any]
    """Query id → what the stage produced besides scores (a HyDE snippet, the
    keywords asked for, a reranker's verdicts); stored for the drill-down."""

    def __init__(self) -> None:
        self.failures = {}
        self.artifacts = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind that can be trained (it has a ``trainable`` flag) must declare the
        flag and implement ``fit`` together: the harness trains exactly the stages
        that declare ``trainable = True``, so either one alone is a mistake."""
        super().__init_subclass__(**kwargs)
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

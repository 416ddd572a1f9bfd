"""The retriever contract: index a corpus once, then return a ranked, scored Run.

Subclass :class:`Retriever`, implement :meth:`~Retriever.index` and
:meth:`~Retriever.search`, and declare what the harness must provide with the
class flags (see docs/extending.md)::

    @RETRIEVERS.register("path-match")
    class PathMatch(Retriever):
        def index(self, corpus, codebase_index=None): ...
        def search(self, queries, k): ...
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from retrieval_bench.contracts.stage import Ranks, Stage, untrained_default
from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Example, Run

if TYPE_CHECKING:
    from retrieval_bench.index.store import CodebaseIndex


class Retriever(Stage):
    """Base of every retriever.

    Flags (class attributes, read by the harness before it builds the stage):

    * ``needs_llm`` — the constructor takes ``llm``, the run's shared client;
    * ``uses_vector_index`` — the harness builds the LanceDB index of the
      snapshot and passes it to :meth:`index`, so the retriever can reuse its
      vectors (``dense``, ``hyde``); not for per-question snapshots, where it
      passes None and vectors come from the embedding cache;
    * ``trainable`` — :meth:`fit` is called with the dataset's ``train_split``
      before :meth:`search` (a config without one fails with a clear error).
    """

    uses_vector_index: ClassVar[bool] = False
    trainable: ClassVar[bool] = False
    _index_stats: dict[str, int] | None = None

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks | None:
        """:attr:`ranks`, else chunks, as :meth:`search` promises (a retriever that
        ranks files, such as ``bm25-files``, says so)."""
        return cls.ranks or "chunks"

    @classmethod
    def uses_vector_index_for(cls, params: Mapping[str, Any]) -> bool:
        """Whether the retriever configured with ``params`` reads the LanceDB index's
        vectors (so a single-snapshot dataset builds one); default
        :attr:`uses_vector_index` (``dense`` with an ONNX backend does not)."""
        return cls.uses_vector_index

    @property
    def index_stats(self) -> dict[str, int]:
        """Counts of the last :meth:`index` call (empty unless the retriever sets them).

        The dense retrievers report ``texts_embedded`` (distinct chunk texts the
        model embedded), ``texts_cached`` (distinct texts served by the embedding
        cache) and ``vectors_reused`` (vectors taken from a LanceDB index); the
        harness adds them to the dataset's (and snapshot group's) provenance.
        """
        return dict(self._index_stats or {})

    @index_stats.setter
    def index_stats(self, stats: Mapping[str, int]) -> None:
        self._index_stats = dict(stats)

    @abstractmethod
    def index(self, corpus: Corpus, codebase_index: CodebaseIndex | None = None) -> None:
        """Prepare to search ``corpus``.

        ``codebase_index`` is the run's LanceDB index over the same chunks when
        the class declares ``uses_vector_index`` (None otherwise, and always
        None outside a benchmark run); other retrievers ignore it.
        """

    @abstractmethod
    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """At most ``k`` chunk ids with scores (higher = better) per ``{query_id: text}``.

        Chunk ids come from the indexed corpus. A query the retriever cannot
        serve may be left out (it then counts as failed, ``no result``) or
        reported with its reason in :attr:`failures`.
        """

    @untrained_default
    def fit(self, examples: Sequence[Example], corpus: Corpus) -> object:
        """Learn from labelled ``examples`` (a ``trainable`` retriever implements
        this; it may be called again, e.g. per cross-fitting fold, and must then
        forget the previous fit)."""
        raise NotImplementedError(f"{type(self).__name__} is not trainable")

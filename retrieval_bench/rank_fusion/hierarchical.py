"""``hierarchical``: files from one stage, the chunks within each file from another
(docs/stages.md#hierarchical).

Localization at function level needs a ranking of functions; a file ranker
(``bm25-files``, ``ltr``, ``code-graph``) ranks files only, and a file run stands
for the file's chunks in source order (docs/metrics.md#function-and-module-level).
This rung keeps the first input's file order and, inside each file, puts the
chunks the second input ranked, in its order: the file → function hierarchy of
Agentless (Xia et al. 2024, "Agentless: Demystifying LLM-based Software
Engineering Agents") with lexical rankers at both levels. A file the chunk input
did not rank stays as ``file:<path>`` (its chunks in source order when scored).

So the file-level measures equal the file input's (files keep their order) and
only the order within files changes. ``inputs: [files, chunks]``, in that order;
the harness does not lift the chunk input to files (``lifts_inputs``). Those roles
(:meth:`HierarchicalFusion.check_config`) and ``per_file`` (its ``Params``) are
checked with the config, before any work: one or three inputs, a second input that
ranks files (the roles reversed, or two file rankers: no chunk would be placed) or
``per_file`` below 1 would otherwise fail every question of a run that says ``done``.
A chunk ranker as the first input is allowed: its files rank by their best chunk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.stage import Ranks
from retrieval_bench.errors import ConfigError
from retrieval_bench.runs.file_ids import doc_path, file_id, file_path
from retrieval_bench.types import Run


def check_roles(inputs: Sequence[tuple[str, Ranks | None]]) -> None:
    """Two inputs, the second not a file ranker (module doc); ConfigError otherwise."""
    labels = [label for label, _ in inputs]
    if len(inputs) != 2:
        raise ConfigError(
            f"hierarchical: inputs must be two stages, [files, chunks]: a file ranker, then "
            f"the stage whose chunks go within each file; got {len(inputs)}: {labels}"
        )
    (first, first_ranks), (second, second_ranks) = inputs
    if second_ranks != "files":
        return
    if first_ranks == "chunks":
        raise ConfigError(
            f"hierarchical: inputs {labels} are the wrong way round: {second!r} ranks "
            f"files and {first!r} chunks; write inputs: [{second}, {first}]"
        )
    raise ConfigError(
        f"hierarchical: the second input {second!r} ranks files, so no chunk would be "
        f"placed within a file; name a chunk ranker second: inputs: [{first}, <chunks>]"
    )


class HierarchicalFusion(Fusion):
    """Files of the first input, chunks of the second within each (module doc).

    Parameters:
        per_file: most chunks kept per file (None: every chunk the second input ranked).
        name: the fused run's name.
    """

    lifts_inputs = False
    ranks = "chunks"

    class Params(StageParams):
        per_file: int | None = None

        @field_validator("per_file", mode="before")
        @classmethod
        def _integer_from_one(cls, per_file: object) -> object:
            ok = per_file is None or (isinstance(per_file, int) and not isinstance(per_file, bool))
            if not ok or (isinstance(per_file, int) and per_file < 1):
                raise ValueError(
                    f"hierarchical: per_file must be an integer >= 1, not {per_file!r}"
                )
            return per_file

    params: HierarchicalFusion.Params

    def __init__(
        self,
        params: HierarchicalFusion.Params | None = None,
        /,
        *,
        name: str = "hierarchical",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.per_file = p.per_file
        self.name = name

    @classmethod
    def check_config(
        cls, params: Mapping[str, Any], inputs: Sequence[tuple[str, Ranks | None]]
    ) -> None:
        """The roles of the inputs (module doc), with the config (``per_file`` is
        checked by :class:`Params`)."""
        check_roles(inputs)

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """The top ``k`` entries per query: chunk ids, or ``file:`` ids for files the
        chunk input did not rank; scores fall by position."""
        if len(runs) != 2:
            raise ConfigError(
                f"hierarchical: inputs must be [files, chunks], two stages; got {len(runs)}"
            )
        files_run, chunks_run = runs
        out: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            within: dict[str, list[str]] = {}
            for cid, _ in chunks_run.ranked(q):
                if file_path(cid) is None:
                    within.setdefault(doc_path(cid), []).append(cid)
            entries: list[str] = []
            for path in dict.fromkeys(doc_path(d) for d, _ in files_run.ranked(q)):
                chunks = within.get(path, [])[: self.per_file]
                entries.extend(chunks or [file_id(path)])
                if len(entries) >= k:
                    break
            entries = entries[:k]
            out[q] = {d: float(len(entries) - i) for i, d in enumerate(entries)}
        return Run(self.name, out)

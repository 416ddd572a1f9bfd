"""The ``hierarchical`` fusion: the file order of one run, the chunk order of another
within each file (docs/stages.md#hierarchical)."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.registry import FUSIONS
from retrieval_bench.contracts.stage import Ranks
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.hierarchical import HierarchicalFusion
from retrieval_bench.types import Run

FILES = Run("files", {"q": {"file:b.py": 3.0, "file:a.py": 2.0, "file:c.py": 1.0}})
CHUNKS = Run("chunks", {"q": {
    "a.py:1-5:aa": 9.0, "b.py:10-12:bb": 8.0, "a.py:7-9:cc": 7.0, "b.py:1-3:dd": 6.0,
    "z.py:1-2:zz": 5.0,  # a file the file ranker did not rank: left out
}})  # fmt: skip


def test_files_keep_their_order_chunks_follow_the_chunk_run() -> None:
    fused = HierarchicalFusion().fuse([FILES, CHUNKS], k=10)
    assert fused.ids("q") == ["b.py:10-12:bb", "b.py:1-3:dd", "a.py:1-5:aa", "a.py:7-9:cc",
                              "file:c.py"]  # fmt: skip
    assert fused.scores["q"]["b.py:10-12:bb"] == 5.0 and fused.scores["q"]["file:c.py"] == 1.0


def test_per_file_and_k_cut_and_chunk_ids_in_the_file_input() -> None:
    assert HierarchicalFusion(per_file=1).fuse([FILES, CHUNKS], k=10).ids("q") == [
        "b.py:10-12:bb", "a.py:1-5:aa", "file:c.py"]  # fmt: skip
    assert HierarchicalFusion().fuse([FILES, CHUNKS], k=3).ids("q") == [
        "b.py:10-12:bb", "b.py:1-3:dd", "a.py:1-5:aa"]  # fmt: skip
    # a chunk-level first input gives the file order of its best chunks
    by_chunks = Run("files", {"q": {"a.py:7-9:cc": 2.0, "b.py:1-3:dd": 1.0}})
    assert HierarchicalFusion().fuse([by_chunks, CHUNKS], k=10).ids("q")[0] == "a.py:1-5:aa"


def test_inputs_must_be_two() -> None:
    with pytest.raises(ConfigError, match="two stages"):
        HierarchicalFusion().fuse([FILES], k=5)
    with pytest.raises(ConfigError, match="per_file"):
        HierarchicalFusion(per_file=0)


@pytest.mark.parametrize("per_file", [0, -1, 1.5, 2.0, True, "3"])
def test_per_file_is_checked_by_params(per_file: object) -> None:
    message = f"per_file: hierarchical: per_file must be an integer >= 1, not {per_file!r}"
    with pytest.raises(ConfigError) as err:
        HierarchicalFusion.Params.of({"per_file": per_file})
    assert str(err.value) == message
    with pytest.raises(ConfigError) as err:
        HierarchicalFusion(per_file=per_file)
    assert str(err.value) == message


def test_params_build_the_same_fusion_and_check_config_checks_roles_only() -> None:
    fusion = HierarchicalFusion(HierarchicalFusion.Params(per_file=1), name="fn")
    assert (fusion.per_file, fusion.name) == (1, "fn")
    made = FUSIONS.create("hierarchical", {"per_file": 1})
    assert isinstance(made, HierarchicalFusion) and made.params == fusion.params
    assert made.fuse([FILES, CHUNKS], 10).scores == fusion.fuse([FILES, CHUNKS], 10).scores
    assert HierarchicalFusion().per_file is None
    with pytest.raises(ConfigError, match="unknown parameter 'per_fle'"):
        HierarchicalFusion(per_fle=2)
    roles: list[tuple[str, Ranks | None]] = [("files", "files"), ("bm25", "chunks")]
    HierarchicalFusion.check_config({"per_file": 0}, roles)  # a value: Params' check
    with pytest.raises(ConfigError, match="wrong way round"):
        HierarchicalFusion.check_config({"per_file": 2}, roles[::-1])

"""Dataset names and stage labels are identifiers, and a path built from one stays in
its folder; gold paths and entities name things inside the repository
(docs/configuration.md#names-and-labels, docs/datasets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import retrieval_bench as rb
from retrieval_bench.config import parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.identifiers import (
    entity_problem,
    identifier_problem,
    inside,
    repo_path_problem,
)

BAD_NAMES = ["../x", "../../../../../trav/DS", "a/b", "<u>bm</u>", ".hidden", "-x", "a..b", "",
             "a b", "x\n", "/abs"]  # fmt: skip
GOOD_NAMES = ["bm25", "files-issue", "dense_1", "rrf.60", "1st", "LTR-nine"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_are_not_identifiers(name: str) -> None:
    assert identifier_problem(name) is not None


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_names_are_identifiers(name: str) -> None:
    assert identifier_problem(name) is None


def _config(ds_name: str = "d", stage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "c", "datasets": [{"name": ds_name, "questions": "q.jsonl", "snapshot": "r"}],
            "retrievers": [stage or {"name": "bm25"}]}  # fmt: skip


@pytest.mark.parametrize("name", ["../../../../../trav/DS", "<u>bm</u>", "a/b"])
def test_a_dataset_name_that_is_a_path_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError, match=r"datasets\.0\.name.*dataset name.*not a valid name"):
        parse_config(_config(ds_name=name), "c.yaml", Path("/tmp"))


@pytest.mark.parametrize("label", ["../../../../../../trav/STAGE", "<u>bm</u>", "x/y"])
def test_a_stage_id_that_is_a_path_is_a_config_error(label: str) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.0.*id: .* is not a valid name") as err:
        parse_config(_config(stage={"name": "bm25", "id": label}), "c.yaml", Path("/tmp"))
    assert "\n" not in str(err.value)


def test_a_fusion_or_reranker_name_without_an_id_is_checked_too() -> None:
    data = _config() | {"rerankers": [{"name": "a/b"}]}
    with pytest.raises(ConfigError, match="give an 'id'"):
        parse_config(data, "c.yaml", Path("/tmp"))


def test_the_builder_refuses_path_labels() -> None:
    with pytest.raises(ConfigError, match="not a valid name"):
        rb.retriever("bm25", id="../../x")
    with pytest.raises(ConfigError, match="not a valid name"):
        rb.fusion("rrf", id="a/b")
    with pytest.raises(ConfigError, match="not a valid name"):
        rb.reranker("code-graph", id="<u>g</u>")
    with pytest.raises(ConfigError, match="dataset name"):
        rb.Experiment(rb.retriever("bm25"), {"name": "../DS", "questions": "q.jsonl"})


def test_inside_keeps_paths_in_their_folder(tmp_path: Path) -> None:
    assert inside(tmp_path, "ds", "bm25", suffix=".trec") == tmp_path / "ds" / "bm25.trec"
    for names in (("..", "x"), ("ds", "../../x"), ("a/b",)):
        with pytest.raises(ValueError, match="refusing"):
            inside(tmp_path, *names)
    (tmp_path / "out").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "link").symlink_to(tmp_path / "out")  # a name that is a link out
    with pytest.raises(ValueError, match="outside"):
        inside(tmp_path / "runs", "link", "x")


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.py", "a/../../b.py", "C:/x.py",
                                  "a//b.py", "a/./b.py", ""])  # fmt: skip
def test_paths_outside_a_repository_are_refused(path: str) -> None:
    assert repo_path_problem(path) is not None


@pytest.mark.parametrize("entity", ["a.py:", ":f", "a.py", "a.py:f.", "a.py:.f", "a.py:f g",
                                    "../a.py:f", "/a.py:f"])  # fmt: skip
def test_malformed_entities_are_refused(entity: str) -> None:
    assert entity_problem(entity) is not None


@pytest.mark.parametrize("entity", ["a.py:f", "src/m.py:Class.method", "m.py:K.__init__"])
def test_entities_are_accepted(entity: str) -> None:
    assert entity_problem(entity) is None

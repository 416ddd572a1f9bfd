"""What each configured stage ranks, and ``hierarchical``'s roles and values checked
with the config (harness/run/roles.py, docs/stages.md#hierarchical)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.config import parse_config
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.roles import check_roles
from retrieval_bench.harness.run.validate import validate_stages

RETRIEVERS = [
    {"name": "bm25"},
    {"name": "bm25", "id": "bm25-issue", "query": "issue"},
    {"name": "bm25-files", "id": "files"},
]


def _cfg(fusions: list[dict[str, Any]], rerankers: list[dict[str, Any]] | None = None,
         retrievers: list[dict[str, Any]] | None = None) -> Any:  # fmt: skip
    data: dict[str, Any] = {
        "name": "t",
        "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "nowhere"}],
        "retrievers": RETRIEVERS if retrievers is None else retrievers,
        "fusions": fusions,
        "rerankers": rerankers or [],
    }
    return parse_config(data, "cfg.yaml", Path("/tmp"))


def _error(cfg: Any) -> str:
    with pytest.raises(ConfigError) as err:
        validate_stages(cfg)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_what_each_stage_ranks() -> None:
    cfg = _cfg(
        [
            {"name": "rrf", "id": "rrf-chunks", "inputs": ["bm25", "bm25-issue"]},
            {"name": "rrf", "id": "rrf-files", "inputs": ["bm25", "files"]},
            {"name": "rrf", "id": "rrf-level", "inputs": ["bm25"], "level": "file"},
            {"name": "ltr", "model_file": "m.json", "inputs": ["bm25", "files"]},
            {"name": "hierarchical", "id": "fn", "inputs": ["files", "bm25-issue"]},
        ],
        [
            {"name": "code-graph", "id": "graph", "inputs": ["bm25"]},
            {"name": "llm-yesno", "id": "judge", "inputs": ["files"]},
            {"name": "llm-yesno", "id": "judge-chunks", "inputs": ["rrf-chunks"]},
        ],  # fmt: skip
        [
            *RETRIEVERS,
            {"name": "external", "path": "p.trec"},
            {"name": "external", "id": "ents", "path": "p.jsonl", "field": "found_entities"},
        ],
    )
    assert check_roles(cfg) == {
        "bm25": "chunks", "bm25-issue": "chunks", "files": "files", "external": "files",
        "ents": "chunks", "rrf-chunks": "chunks", "rrf-files": "files", "rrf-level": "files",
        "ltr": "files", "fn": "chunks", "graph": "files", "judge": "files",
        "judge-chunks": "chunks",
    }  # fmt: skip


def test_files_then_chunks_pass() -> None:
    ok = [
        {"name": "hierarchical", "id": "a", "inputs": ["files", "bm25-issue"], "per_file": 3},
        {"name": "ltr", "model_file": "m.json", "inputs": ["bm25", "files"]},
        {"name": "hierarchical", "id": "b", "inputs": ["ltr", "bm25"]},
        # a chunk ranker first: its files rank by their best chunk
        {"name": "hierarchical", "id": "c", "inputs": ["bm25", "bm25-issue"]},
    ]
    validate_stages(_cfg(ok, [{"name": "code-graph", "id": "graph", "inputs": ["bm25"]}]))
    validate_stages(_cfg([{"name": "hierarchical", "inputs": ["graph", "bm25"]}],
                         [{"name": "code-graph", "id": "graph", "inputs": ["bm25"]}]))  # fmt: skip


def test_roles_reversed() -> None:
    message = _error(_cfg([{"name": "hierarchical", "id": "fn", "inputs": ["bm25", "files"]}]))
    assert message == (
        "fusions.0 (fn): hierarchical: inputs ['bm25', 'files'] are the wrong way round: "
        "'files' ranks files and 'bm25' chunks; write inputs: [files, bm25]"
    )


def test_two_file_rankers() -> None:
    fusions = [{"name": "rrf", "inputs": ["bm25", "files"]},
               {"name": "hierarchical", "id": "fn", "inputs": ["files", "rrf"]}]  # fmt: skip
    assert _error(_cfg(fusions)) == (
        "fusions.1 (fn): hierarchical: the second input 'rrf' ranks files, so no chunk would "
        "be placed within a file; name a chunk ranker second: inputs: [files, <chunks>]"
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"inputs": ["files"]}, "inputs must be two stages, [files, chunks]: a file ranker, "
         "then the stage whose chunks go within each file; got 1: ['files']"),
        ({"inputs": ["files", "bm25", "bm25-issue"]}, "got 3: ['files', 'bm25', 'bm25-issue']"),
        ({}, "got 3: ['bm25', 'bm25-issue', 'files']"),  # default: every retriever
        ({"inputs": ["files", "bm25"], "per_file": -1},
         "hierarchical: per_file must be an integer >= 1, not -1"),
        ({"inputs": ["files", "bm25"], "per_file": 0},
         "hierarchical: per_file must be an integer >= 1, not 0"),
    ],
)  # fmt: skip
def test_inputs_and_per_file(entry: dict[str, Any], expected: str) -> None:
    message = _error(_cfg([{"name": "hierarchical", "id": "fn", **entry}]))
    # a bad value is refused by the stage's Params (naming the key), a role by check_config
    prefix = "fusions.0.per_file: " if "per_file" in entry else "fusions.0 (fn): hierarchical: "
    assert message.startswith(prefix) and expected in message, message

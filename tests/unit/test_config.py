"""Config validation: good configs load; bad keys are named in the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.config import load_config, parse_config
from retrieval_bench.errors import ConfigError

BASE = {
    "name": "t",
    "datasets": [{"name": "a", "questions": "q.jsonl", "snapshot": "repo"}],
    "retrievers": [{"name": "bm25", "k1": 1.2}],
}


def test_stage_params_pass_through() -> None:
    cfg = parse_config(BASE)
    assert cfg.retrievers[0].params() == {"k1": 1.2}
    assert cfg.retrievers[0].label == "bm25"
    assert cfg.chunker.name == "ast"


def test_relative_paths_resolve_against_base(tmp_path: Path) -> None:
    cfg = parse_config(BASE, base_dir=tmp_path)
    assert cfg.datasets[0].questions == tmp_path / "q.jsonl"
    assert cfg.datasets[0].snapshot == str(tmp_path / "repo")


def test_pypi_and_git_snapshots_are_left_alone(tmp_path: Path) -> None:
    data = dict(BASE)
    data["datasets"] = [
        {"name": "a", "questions": "q.jsonl", "snapshot": "pytest==7.4.0"},
        {"name": "b", "questions": "q.jsonl", "snapshot": "git+file:///x@abc"},
    ]
    cfg = parse_config(data, base_dir=tmp_path)
    assert [d.snapshot for d in cfg.datasets] == ["pytest==7.4.0", "git+file:///x@abc"]


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"candidates": 0}, "candidates"),
        ({"retrievers": []}, "retrievers"),
        ({"bogus": 1}, "bogus"),
        ({"metrics": {"ks": [0]}}, "metrics.ks"),
        ({"datasets": [{"name": "a", "snapshot": "x"}]}, "datasets.0.questions"),
    ],
)
def test_bad_key_is_named(patch: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        parse_config({**BASE, **patch})


def test_duplicate_stage_labels_rejected() -> None:
    data = {**BASE, "retrievers": [{"name": "exact"}, {"name": "exact", "terms": "raw"}]}
    with pytest.raises(ConfigError, match="give an 'id'"):
        parse_config(data)
    data["retrievers"][1]["id"] = "exact-raw"  # type: ignore[index]
    assert [s.label for s in parse_config(data).retrievers] == ["exact", "exact-raw"]


def test_table_k_joins_ks() -> None:
    cfg = parse_config({**BASE, "table_k": 7})
    assert 7 in cfg.metrics.ks


def test_load_yaml_and_toml(tmp_path: Path) -> None:
    y = tmp_path / "c.yaml"
    y.write_text(
        "name: t\ndatasets: [{name: a, questions: q.jsonl, snapshot: r}]\n"
        "retrievers: [{name: bm25}]\n"
    )
    t = tmp_path / "c.toml"
    t.write_text(
        'name = "t"\n[[datasets]]\nname = "a"\nquestions = "q.jsonl"\nsnapshot = "r"\n'
        '[[retrievers]]\nname = "bm25"\n'
    )
    assert load_config(y, tmp_path).fingerprint() == load_config(t, tmp_path).fingerprint()


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_shipped_configs_validate() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "benchmarks" / "configs").glob("*.yaml")):
        load_config(path, root)

"""Config validation: good configs load; bad keys are named in the message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_bench.config import BenchmarkConfig, load_config, parse_config
from retrieval_bench.data_root import expand_data_root
from retrieval_bench.errors import ConfigError
from tests.benchmark_data import CONFIGS, PLACEHOLDER, REPO_ROOT

BASE: dict[str, Any] = {
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


def test_config_paths_resolve_against_the_config_folder_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    data = {
        **BASE,
        "datasets": [{"name": "a", "questions": "../data/q.jsonl", "snapshot": "../repo"}],
        "retrievers": [
            {"name": "dense", "model_path": "models/minilm", "cache_dir": "/abs/cache"},
            {"name": "exact", "rg_path": "../bin/rg"},
        ],
    }
    (folder / "bench.yaml").write_text(json.dumps(data))  # JSON is valid YAML
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    cfg = load_config(Path("../../configs/bench.yaml"))
    assert cfg.datasets[0].questions == tmp_path / "data" / "q.jsonl"
    assert cfg.datasets[0].snapshot == str(tmp_path / "repo")
    dense, exact = cfg.retrievers
    assert dense.params() == {"model_path": str(folder / "models" / "minilm"),
                              "cache_dir": "/abs/cache"}  # fmt: skip
    assert exact.params() == {"rg_path": str(tmp_path / "bin" / "rg")}
    # an explicit base_dir still wins
    assert load_config(folder / "bench.yaml", elsewhere).datasets[0].snapshot == str(
        elsewhere.parent / "repo"
    )


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


def test_include_globs_are_checked_and_part_of_the_fingerprint() -> None:
    ds = BASE["datasets"][0]
    plain = parse_config(BASE)
    only_py = parse_config({**BASE, "datasets": [{**ds, "include": ["*.py"]}]})
    assert plain.datasets[0].include == [] and only_py.datasets[0].include == ["*.py"]
    assert plain.fingerprint() != only_py.fingerprint()
    with pytest.raises(ConfigError, match=r"include: '!\*\.py' selects no file"):
        parse_config({**BASE, "datasets": [{**ds, "include": ["!*.py"]}]})


def test_duplicate_stage_labels_rejected() -> None:
    data = {**BASE, "retrievers": [{"name": "exact"}, {"name": "exact", "terms": "raw"}]}
    with pytest.raises(ConfigError, match="give an 'id'"):
        parse_config(data)
    data["retrievers"][1]["id"] = "exact-raw"
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


SHIPPED = sorted(CONFIGS.glob("*.yaml"))
READS_DATA = [p for p in SHIPPED if PLACEHOLDER in p.read_text(encoding="utf-8")]
"""The bundled configs that read the benchmark data (from the data root)."""


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _stand_in_data(path: Path, root: Path) -> None:
    """An empty file under ``root`` for each path under the data root that the config
    ``path`` names (its sweep grid included): what loading it checks is there."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    expand_data_root(data, path.parent, str(path), root)
    for value in _strings(data):
        if Path(value).is_relative_to(root):
            Path(value).parent.mkdir(parents=True, exist_ok=True)
            Path(value).touch()


def _load_shipped(path: Path, data_root: Path | None = None) -> BenchmarkConfig:
    """A bundled config loaded as ``rbench run``/``rbench sweep`` loads it (a sweep's
    grid must expand to more than one cell)."""
    from retrieval_bench.sweep.grid import expand
    from retrieval_bench.sweep.spec import load_sweep_config

    if path.name.startswith("sweep-"):  # a base config plus a grid that expands
        cfg, sweep = load_sweep_config(path, data_root=data_root)
        assert len(expand(cfg, sweep)) > 1, path
        return cfg
    return load_config(path, data_root=data_root)  # relative to its folder, whatever the cwd


def _check_paths(path: Path, cfg: BenchmarkConfig, root: Path) -> None:
    """Every file a bundled config reads is in the repository or under the data root."""
    for ds in cfg.datasets:
        assert ds.questions.is_relative_to(REPO_ROOT) or ds.questions.is_relative_to(root), (
            path, ds.questions)  # fmt: skip
        if ds.snapshot is not None and "==" not in ds.snapshot:
            assert (Path(ds.snapshot) / ".rbenchignore").is_file(), (path, ds.snapshot)
    for repo, where in cfg.repos.items():  # per-question snapshots: local bundles
        assert Path(where).is_relative_to(root), (path, repo, where)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_validate(path: Path, tmp_path: Path) -> None:
    """Every bundled config is valid, with or without the benchmark data: the files it
    reads from the data root are empty stand-ins in a temporary one (``--data-root``,
    which wins over ``$RBENCH_DATA_ROOT``). Whether the real data is there is
    :func:`test_shipped_configs_find_their_data`'s part."""
    root = tmp_path / "data"
    _stand_in_data(path, root)
    _check_paths(path, _load_shipped(path, data_root=root), root)


@pytest.mark.needs_data_root
@pytest.mark.parametrize("path", READS_DATA, ids=lambda p: p.name)
def test_shipped_configs_find_their_data(path: Path, data_root: Path) -> None:
    """Where the benchmark data is (CI), each config that reads it loads from the data
    root as it is (``$RBENCH_DATA_ROOT``, else ``../shared/data``), and the git bundles
    of its per-question snapshots are there; on a clone without the data it skips."""
    cfg = _load_shipped(path)  # a question file missing from the data root fails here
    _check_paths(path, cfg, data_root)
    missing = [where for where in cfg.repos.values() if not Path(where).is_file()]
    assert missing == [], path


ANSWER_METRICS = [
    "exact_match",
    "bleu:max_order=2,id=bleu2",
    {
        "id": "quality",
        "aggregation": "geometric_mean",
        "parts": [{"name": "token_f1", "weight": 0.3}, {"name": "llm_judge", "weight": 0.7}],
    },
]


def test_answer_metrics_round_trip() -> None:
    cfg = parse_config({**BASE, "answer_metrics": ANSWER_METRICS})
    assert parse_config(BASE).answer_metrics == []
    specs = cfg.answer_metrics
    assert [s.label for s in specs] == ["exact_match", "bleu2", "quality"]
    assert specs[1].params() == {"max_order": 2}
    assert specs[2].name == "composite" and specs[2].params() == {"aggregation": "geometric_mean"}
    assert specs[2].parts is not None and [p.weight for p in specs[2].parts] == [0.3, 0.7]
    again = parse_config(cfg.model_dump(mode="json", exclude_none=True))
    assert again.answer_metrics == specs
    assert again.fingerprint() == cfg.fingerprint()


@pytest.mark.parametrize(
    ("metrics", "needle"),
    [
        (
            ["exact_match", {"parts": [{"name": "a", "weight": -0.5}, {"name": "b"}]}],
            "answer_metrics.1.parts.0.weight: Input should be greater than or equal to 0",
        ),
        ([{"id": "x"}], "answer_metrics.0.name: Field required"),
        (["bleu:max_order"], "answer_metrics.0: Value error, --metric 'bleu:max_order'"),
        (
            ["bleu", "bleu:max_order=2"],
            "answer_metrics: Value error, metric labels must be unique; give an 'id' to: bleu",
        ),
        ({"name": "bleu"}, "answer_metrics: Input should be a valid list"),
    ],
)
def test_answer_metric_errors_name_the_key_path(metrics: object, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "answer_metrics": metrics})
    assert needle in str(info.value)


def test_baseline_names_a_stage_and_a_per_query_metric() -> None:
    fused = {**BASE, "retrievers": [{"name": "bm25"}, {"name": "dense"}],
             "fusions": [{"name": "rrf", "id": "rrf-issue"}]}  # fmt: skip
    cfg = parse_config({**fused, "baseline": {"stage": "rrf-issue", "metric": "Acc@7"}})
    assert cfg.baseline is not None and cfg.baseline.stage == "rrf-issue"
    assert 7 in cfg.metrics.ks  # its cut-off is computed, as a table column's
    with pytest.raises(ConfigError) as info:
        parse_config({**fused, "baseline": {"stage": "bm2"}}, "c.yaml")
    assert str(info.value) == (  # one line, as for answerer.input
        "c.yaml: (top level): Value error, baseline.stage: 'bm2' is not a stage label; "
        "choose one of: bm25, dense, rrf-issue"
    )
    with pytest.raises(ConfigError, match=r"baseline\.metric: .*'seconds' is a stage total"):
        parse_config({**fused, "baseline": {"metric": "seconds"}})
    with pytest.raises(ConfigError, match=r"baseline\.bogus"):
        parse_config({**fused, "baseline": {"bogus": 1}})
    # an absent baseline is left out of the fingerprint (old runs keep theirs)
    plain = parse_config(fused)
    assert plain.baseline is None
    assert parse_config({**fused, "baseline": None}).fingerprint() == plain.fingerprint()
    assert parse_config({**fused, "baseline": {"metric": "MRR"}}).fingerprint() != (
        plain.fingerprint()
    )

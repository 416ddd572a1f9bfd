"""The data root of the bundled configs (issue 19 item 17): ``${RBENCH_DATA_ROOT:-D}``
is ``--data-root``, else ``$RBENCH_DATA_ROOT``, else ``D`` from the config's folder;
a missing dataset file there is one line saying where the data root is, who chose
it, and how to point at another one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from retrieval_bench.config import load_config
from retrieval_bench.data_root import DATA_ROOT_ENV, HOW
from retrieval_bench.errors import ConfigError
from retrieval_bench.sweep.spec import load_sweep_config

REPO = Path(__file__).resolve().parents[2]
PLACEHOLDER = "${RBENCH_DATA_ROOT:-../data}"


def _config(folder: Path, questions: str, **extra: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"name": "c", "datasets": [{"name": "d", "questions": questions}],
           "retrievers": [{"name": "bm25"}], **extra}  # fmt: skip
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _data(root: Path) -> Path:
    (root / "devsets").mkdir(parents=True, exist_ok=True)
    (root / "devsets" / "q.jsonl").write_text("{}\n")
    return root / "devsets" / "q.jsonl"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ROOT_ENV, raising=False)


def test_the_default_is_relative_to_the_config_folder(tmp_path: Path) -> None:
    questions = _data(tmp_path / "data")
    path = _config(tmp_path / "configs", f"{PLACEHOLDER}/devsets/q.jsonl",
                   repos={"o/r": f"{PLACEHOLDER}/repos/r.bundle"})  # fmt: skip
    cfg = load_config(path)
    assert cfg.datasets[0].questions == questions
    assert cfg.repos == {"o/r": str(tmp_path / "data" / "repos" / "r.bundle")}


def test_the_environment_then_the_option_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(tmp_path / "configs", f"{PLACEHOLDER}/devsets/q.jsonl")
    env_q, opt_q = _data(tmp_path / "env"), _data(tmp_path / "opt")
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path / "env"))
    assert load_config(path).datasets[0].questions == env_q
    assert load_config(path, data_root=tmp_path / "opt").datasets[0].questions == opt_q
    monkeypatch.chdir(tmp_path)
    assert load_config(path, data_root=Path("opt")).datasets[0].questions == opt_q


def test_a_missing_root_or_file_says_where_and_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(tmp_path / "configs", f"{PLACEHOLDER}/devsets/q.jsonl")
    root = tmp_path / "data"
    with pytest.raises(ConfigError) as missing_root:
        load_config(path)
    assert str(missing_root.value) == (
        f"{path}: dataset d: {root / 'devsets' / 'q.jsonl'} is missing: the data root "
        f"{root} (the config's default ../data) does not exist; {HOW}"
    )
    (tmp_path / "other").mkdir()
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path / "other"))
    with pytest.raises(ConfigError) as missing_file:
        load_config(path)
    assert str(missing_file.value) == (
        f"{path}: dataset d: {tmp_path / 'other' / 'devsets' / 'q.jsonl'} does not exist in "
        f"the data root {tmp_path / 'other'} ($RBENCH_DATA_ROOT); {HOW}"
    )
    assert "\n" not in str(missing_file.value)


def test_a_placeholder_without_default_needs_a_root(tmp_path: Path) -> None:
    path = _config(tmp_path, "${RBENCH_DATA_ROOT}/devsets/q.jsonl")
    with pytest.raises(ConfigError, match=r"reads its data from \$\{RBENCH_DATA_ROOT\}, which "
                       r"is not set: set RBENCH_DATA_ROOT or pass --data-root DIR"):  # fmt: skip
        load_config(path)
    assert load_config(path, data_root=_data(tmp_path / "d").parents[1]).datasets[0].questions


def test_a_sweep_config_takes_the_data_root_too(tmp_path: Path) -> None:
    questions = _data(tmp_path / "elsewhere")
    grid = {"retrievers.bm25.cache_dir": ["${RBENCH_DATA_ROOT}/a", "${RBENCH_DATA_ROOT}/b"]}
    path = _config(tmp_path / "configs", "${RBENCH_DATA_ROOT}/devsets/q.jsonl",
                   sweep={"grid": grid})  # fmt: skip
    base, spec = load_sweep_config(path, data_root=tmp_path / "elsewhere")
    assert base.datasets[0].questions == questions
    root = tmp_path / "elsewhere"
    assert spec.grid["retrievers.bm25.cache_dir"] == [str(root / "a"), str(root / "b")]


def test_bundled_configs_read_shared_data_through_the_data_root() -> None:
    """No bundled config hard-codes ../shared/data: each goes through the placeholder."""
    offenders = []
    for path in sorted((REPO / "benchmarks" / "configs").glob("*.yaml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            value = line.split("#", 1)[0]
            if "shared/data" in value and "${RBENCH_DATA_ROOT:-../../../shared/data}" not in value:
                offenders.append(f"{path.name}:{n}")
    assert offenders == []

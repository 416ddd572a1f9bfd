"""A config file that cannot be read as written, end to end through the CLI: one
line naming the file (and the line), exit 2, for ``rbench run`` and ``rbench sweep``
alike (docs/architecture.md#bad-input-and-failures, retrieval_bench/config_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, main
from retrieval_bench.config import load_metric_specs
from retrieval_bench.config_files import load_yaml
from retrieval_bench.errors import ConfigError
from tests.integration.conftest import write_jsonl

pytestmark = pytest.mark.integration

BODY = """\
name: t
datasets:
  - {name: d, questions: q.jsonl, snapshot: repo}
retrievers:
  - {name: bm25}
"""
SWEEP = "sweep:\n  grid:\n    retrievers.bm25.k1: [1.2, 1.5]\n"


def _files(tmp_path: Path) -> None:
    """The questions and repository the configs name, so only the file itself is wrong."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("x = 1\n")
    write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "query": "x", "gold_files": ["a.py"]}])


def _error(command: str, path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of ``rbench COMMAND path``, which must exit 2."""
    assert main([command, str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_config_that_is_not_utf8_is_one_line(
    tmp_path: Path, workspace: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to end in a ``UnicodeDecodeError`` traceback."""
    _files(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes((BODY + "# caf\xe9\n" + SWEEP).encode("latin-1"))
    offset = len(BODY) + len("# caf")
    assert _error(command, cfg, capsys) == (
        f"rbench: error: {cfg}: not UTF-8 text (byte 0xe9 at line 6, offset {offset}): "
        "re-save it as UTF-8"
    )


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_malformed_yaml_is_one_line_with_its_line_and_column(
    tmp_path: Path, workspace: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyYAML's own message is seven lines with a caret drawing."""
    _files(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BODY + "candidates: [1, 2\ntable_k: 5\n" + SWEEP)
    assert _error(command, cfg, capsys) == (
        f"rbench: error: {cfg}:7:8: not valid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 6, column 13)"
    )
    cfg.write_text(BODY + "table_k: x: 5\n" + SWEEP)
    assert _error(command, cfg, capsys) == (
        f"rbench: error: {cfg}:6:11: not valid YAML: mapping values are not allowed here"
    )


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_key_given_twice_is_refused_not_overwritten(
    tmp_path: Path, workspace: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``yaml.safe_load`` kept the second ``retrievers:`` and dropped the first."""
    _files(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BODY + "retrievers: [{name: exact}]\n" + SWEEP)
    assert _error(command, cfg, capsys) == (
        f"rbench: error: {cfg}:6:1: not valid YAML: duplicate key 'retrievers' "
        "(first at line 4): keep one"
    )
    # at any depth, in a flow mapping too; keys merged in with << may be overridden
    cfg.write_text(BODY.replace("{name: bm25}", "{name: bm25, k1: 1.2, k1: 1.5}") + SWEEP)
    assert _error(command, cfg, capsys) == (
        f"rbench: error: {cfg}:5:27: not valid YAML: duplicate key 'k1' (first at line 5): keep one"
    )


def test_a_key_given_twice_in_the_sweep_grid_is_refused(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _files(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BODY + SWEEP + "    retrievers.bm25.k1: [0.9]\n")
    assert _error("sweep", cfg, capsys) == (
        f"rbench: error: {cfg}:9:5: not valid YAML: duplicate key 'retrievers.bm25.k1' "
        "(first at line 8): keep one"
    )


def test_merge_keys_still_override() -> None:
    text = "base: &b {name: bleu, max_order: 4}\nmetric: {<<: *b, max_order: 2}\n"
    assert load_yaml(text)["metric"] == {"name": "bleu", "max_order": 2}


def test_metric_files_refuse_duplicate_keys_and_toml_refuses_its_own(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("answer_metrics: [token_f1]\nanswer_metrics: [bleu]\n")
    with pytest.raises(ConfigError) as info:
        load_metric_specs(path)
    assert str(info.value) == (
        f"{path}:2:1: not valid YAML: duplicate key 'answer_metrics' (first at line 1): keep one"
    )
    toml = tmp_path / "m.toml"
    toml.write_text('answer_metrics = ["token_f1"]\nanswer_metrics = ["bleu"]\n')
    with pytest.raises(ConfigError) as info:
        load_metric_specs(toml)
    assert str(info.value) == (
        f"{toml}: not valid TOML: Cannot overwrite a value (at line 2, column 26)"
    )


def test_the_answer_label_is_reserved_without_an_answerer(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _files(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BODY.replace("{name: bm25}", "{name: bm25, id: answer}"))
    assert _error("run", cfg, capsys) == (
        f"rbench: error: {cfg}: (top level): Value error, stage label 'answer' is reserved "
        "for the answerer's results; give that stage another 'id'"
    )


def test_repository_addresses_that_git_would_read_as_options_are_refused(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``git+--upload-pack=CMD@HEAD`` reached ``git clone`` as an option."""
    _files(tmp_path)
    marker = tmp_path / "ran"
    cfg = tmp_path / "c.yaml"
    data = {
        "name": "t",
        "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": "repo"}],
        "retrievers": [{"name": "bm25"}],
        "repos": {"org/proj": f"--upload-pack=touch {marker} ://"},
    }
    cfg.write_text(json.dumps(data))
    assert _error("run", cfg, capsys) == (
        f"rbench: error: {cfg}: repos: Value error, org/proj: '--upload-pack=touch {marker} ://' "
        "starts with '-'; give a URL, a local path (./-name) or a git bundle"
    )
    spec = f"git+--upload-pack=touch {marker}@HEAD"
    data = {**data, "datasets": [{"name": "d", "questions": "q.jsonl", "snapshot": spec}]}
    data.pop("repos")
    cfg.write_text(json.dumps(data))
    assert _error("run", cfg, capsys) == (
        f"rbench: error: repository address '--upload-pack=touch {marker}' starts with '-' "
        f"(from {spec!r}): give a URL, a local path or a git bundle (a relative path: ./-name)"
    )
    assert not marker.exists()

"""``rbench --help`` and every subcommand's help: each option explains itself,
choices and defaults are shown; ``rbench llm status`` exits alike with and
without ``--json``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_FAILED, build_parser, main


def _parsers(
    parser: argparse.ArgumentParser, path: str = "rbench"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_option_of_every_subcommand_has_help() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if not (action.help or "").strip():
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_every_subcommand_has_help() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {a.dest for a in action._choices_actions if a.help}
                missing += [f"{path} {n}" for n in action.choices if n not in helped]
    assert missing == []


def test_top_level_help_cites_no_spec_sections(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "SPEC" not in out and "§" not in out
    assert "retrieval over codebases" in out


def test_query_help_lists_choices_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["query", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    # the registry's names
    assert (
        "one of bm25, bm25-files, dense, dense-adapted, exact, external, fuzzy, history, hyde"
        in out
    )
    assert "one of ast, truncate, window" in out
    assert "(default: 10)" in out and "(default: dense)" in out and "(default: ast)" in out
    assert "(default: None)" not in out


def test_serve_help_shows_the_port_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "(default: 8000)" in capsys.readouterr().out


def test_building_the_parser_does_not_load_the_registries() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from retrieval_bench.cli import build_parser; build_parser(); "
        "print('retrieval_bench.retrieval.dense' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # `rbench runs` does not import LanceDB & co.


def test_an_unknown_retriever_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["query", ".", "q", "--retriever", "nope"])
    assert exc.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_llm_status_exit_code_is_the_same_with_and_without_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]  # no server recorded there
    assert main([*ws, "llm", "status"]) == EXIT_FAILED
    assert "not running" in capsys.readouterr().out
    assert main([*ws, "llm", "status", "--json"]) == EXIT_FAILED
    assert json.loads(capsys.readouterr().out) == {"running": False}

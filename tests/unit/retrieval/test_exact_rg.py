"""The exact retriever with the real ripgrep binary on a temporary repository."""

from __future__ import annotations

import math
import os
import stat
import sys
from pathlib import Path

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import SnapshotError, ToolMissingError
from retrieval_bench.files import SourceFile
from retrieval_bench.retrieval.exact import ExactRetriever, find_rg
from tests.unit.retrieval.conftest import window_chunks, window_corpus

pytestmark = pytest.mark.integration

try:
    find_rg()
except ToolMissingError:  # pragma: no cover - the venv ships rg
    pytest.skip("ripgrep is not installed", allow_module_level=True)

JSONL = '''"""Line parsing."""
import json


def parse_json_line(raw):
    """Parse one line."""
    return json.loads(raw)


def dump_line(obj):
    return json.dumps(obj)
'''
APP = "from src.jsonl import parse_json_line\n\nrecords = [parse_json_line(x) for x in data]\n"
ODD_NAME = os.fsdecode(b"caf\xe9_mod.py")  # a file name that is not UTF-8


def _write(root: Path, rel: str | bytes, data: str | bytes) -> None:
    path = root / os.fsdecode(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write(root, "src/jsonl.py", JSONL)
    _write(root, "src/app.py", APP)
    _write(root, ".gitignore", "build/\n")
    _write(root, ".rbenchignore", "secret.py\n")
    _write(root, "build/gen.py", "parse_json_line = 1\n")
    _write(root, "secret.py", "def parse_json_line(): pass\n")
    _write(root, "blob.bin", b"\x00\x01parse_json_line\n")
    _write(root, "latin.txt", b"caf\xe9 parse_json_line\n")
    _write(root, b"caf\xe9_mod.py", "x = parse_json_line\n")
    _write(root, ".hidden/conf.py", "HOOK = parse_json_line\n")
    _write(root, ".git/config", "parse_json_line\n")
    _write(root, "README.md", "Nothing to see here.\n")
    return root


def _everything_corpus(root: Path) -> Corpus:
    """Chunks for *every* file, ignored ones included: only rg's own rules can drop them."""
    chunks = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            text = full.read_bytes().decode("utf-8", errors="replace")
            chunks.extend(window_chunks(SourceFile(rel, text, ""), 4))
    return Corpus(root, chunks)


def _search(corpus: Corpus, question: str, k: int = 10, **params: object) -> dict[str, float]:
    ex = ExactRetriever(**params)  # type: ignore[arg-type]
    ex.index(corpus)
    return ex.search({"q": question}, k).scores["q"]


def _paths(corpus: Corpus, scores: dict[str, float]) -> set[str]:
    return {corpus.path_of(cid) for cid in scores}


def test_identifiers_rung_finds_the_defining_chunk(repo: Path) -> None:
    corpus = window_corpus(repo, size=4)
    ex = ExactRetriever()
    ex.index(corpus)
    run = ex.search({"q": "How does parse_json_line use json.loads?"}, k=10)
    assert ex.last_terms["q"] == ["parse_json_line", "json.loads", "loads"]
    top = corpus.by_id[run.ids("q")[0]]
    assert (top.path, top.start_line, top.end_line) == ("src/jsonl.py", 5, 8)
    assert _paths(corpus, run.scores["q"]) == {
        "src/jsonl.py",
        "src/app.py",
        "latin.txt",
        ODD_NAME,
        ".hidden/conf.py",
    }
    assert ex.failures == {}


def test_rg_itself_honours_ignore_files_binary_and_git_dir(repo: Path) -> None:
    corpus = _everything_corpus(repo)
    for bad in ("build/gen.py", "secret.py", "blob.bin", ".git/config"):
        assert corpus.chunks_of(bad), "the corpus offers the file, so only rg can skip it"
    found = _paths(corpus, _search(corpus, "parse_json_line", k=50))
    assert found == {"src/jsonl.py", "src/app.py", "latin.txt", ODD_NAME, ".hidden/conf.py"}


def test_hand_computed_scores(repo: Path) -> None:
    corpus = window_corpus(repo, size=4)
    n_files = len(corpus.paths)
    assert n_files == 8  # .gitignore .rbenchignore README.md latin.txt odd src/*.py .hidden
    scores = _search(corpus, "where is parse_json_line")
    w = math.log(1 + n_files / 5)  # five files contain the term
    by_place = {(corpus.by_id[c].path, corpus.by_id[c].start_line): s for c, s in scores.items()}
    assert by_place[("src/jsonl.py", 5)] == pytest.approx(w, abs=1e-12)
    assert by_place[("src/app.py", 1)] == pytest.approx(w + 0.02 * 1, abs=1e-12)  # two lines
    two_terms = _search(corpus, "parse_json_line and dump_line")
    wd = math.log(1 + n_files / 1)  # dump_line is in one file; "parse_json_line" in five
    best = max(two_terms.items(), key=lambda kv: kv[1])
    assert corpus.by_id[best[0]].start_line == 9 and best[1] == pytest.approx(wd, abs=1e-12)


def test_no_match_and_no_terms_give_empty_results(repo: Path) -> None:
    corpus = window_corpus(repo, size=4)
    ex = ExactRetriever()
    ex.index(corpus)
    run = ex.search({"none": "where is frobnicate_widget", "stop": "is it the?"}, k=5)
    assert run.scores == {"none": {}, "stop": {}}
    assert ex.last_terms["stop"] == [] and ex.failures == {}


def test_max_count_and_max_columns_guards(tmp_path: Path) -> None:
    root = tmp_path / "r"
    _write(root, "many.py", "".join(f"token_{i} = needle_name\n" for i in range(10)))
    _write(root, "long.js", "var a='" + "x" * 5000 + "';needle_name();\n")
    corpus = window_corpus(root, size=100)
    scores = _search(corpus, "needle_name", max_count=3, max_columns=1000)
    assert _paths(corpus, scores) == {"many.py"}
    w = math.log(1 + 2 / 1)
    assert list(scores.values()) == [pytest.approx(w + 0.02 * 2, abs=1e-12)]


def test_case_modes(tmp_path: Path) -> None:
    root = tmp_path / "r"
    _write(root, "srv.py", "class HTTPServer:\n    pass\n")
    corpus = window_corpus(root)
    assert _search(corpus, "`httpserver`")
    assert not _search(corpus, "`httpserver`", case="sensitive")
    assert _search(corpus, "`HTTPServer`", case="sensitive")
    assert not _search(corpus, "`HttpServer`", case="smart")


def test_rg_error_exit_keeps_matches_and_reports(repo: Path, tmp_path: Path) -> None:
    fake = tmp_path / "fake-rg"
    fake.write_text(
        "#!/bin/sh\n"
        'echo \'{"type":"match","data":{"path":{"text":"./src/jsonl.py"},"lines":{"text":"x"},'
        '"line_number":5,"submatches":[{"match":{"text":"parse_json_line"},"start":4,"end":19}]}}\'\n'
        "echo 'rg: ./locked: Permission denied (os error 13)' >&2\n"
        "exit 2\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    corpus = window_corpus(repo, size=4)
    ex = ExactRetriever(rg_path=str(fake))
    ex.index(corpus)
    run = ex.search({"q": "parse_json_line"}, k=5)
    assert [corpus.by_id[c].start_line for c in run.ids("q")] == [5]
    assert ex.failures["q"].startswith("ripgrep exit 2: rg: ./locked: Permission denied")


def test_missing_rg_and_bad_root(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ToolMissingError, match="rg_path"):
        ExactRetriever(rg_path=str(tmp_path / "nope")).index(window_corpus(repo))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    with pytest.raises(ToolMissingError, match="pip install ripgrep"):
        find_rg()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "rg").write_text("")
    assert find_rg() == str(tmp_path / "bin" / "rg")
    monkeypatch.undo()
    with pytest.raises(SnapshotError):
        ExactRetriever().index(Corpus(tmp_path / "missing", []))


def test_registered() -> None:
    assert isinstance(registry.create("retrievers", "exact", terms="raw"), ExactRetriever)

"""Reading an issue (retrieval/issue_query.py) and the rungs that use it:
``bm25 query: issue`` and ``exact terms: issue``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError, ToolMissingError
from retrieval_bench.files import SourceFile
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.exact import ExactRetriever, find_rg
from retrieval_bench.retrieval.issue_query import (
    IssueReader,
    defines,
    is_identifier,
    issue_bag,
    may_define,
    parse_issue,
)
from tests.unit.retrieval.conftest import window_chunks

TRACEBACK_ISSUE = """Dataset.to_json_dict can still raise when suppress_invalid_tags=True
I call `Dataset.to_json_dict(suppress_invalid_tags=True)` and still get an exception.

Traceback:
```
  File "dicom.py", line 143, in create_dict
    json_ds = ds.to_json_dict(suppress_invalid_tags=True)
  File "/usr/lib/python3/dist-packages/pydicom/dataset.py", line 2495, in to_json_dict
    data_element = self[key]
  File "/usr/lib/python3/dist-packages/click/core.py", line 763, in invoke
    return __callback(*args, **kwargs)
  File "/usr/lib/python3/dist-packages/pydicom/valuerep.py", line 1131, in __new__
    raise TypeError("Could not convert value to integer without loss")
TypeError: Could not convert value to integer without loss: '2.0'
```

```python
from pydicom.valuerep import IS
print(IS("2.0"))
```
"""

SNAPSHOT = [
    "pydicom/dataset.py",
    "pydicom/valuerep.py",
    "pydicom/core.py",
    "tests/test_dataset.py",
    "src/sqlfluff/rules/L031.py",
    "setup.py",
]


# -- parsing -------------------------------------------------------------------------------


def test_traceback_frames_exception_and_literal_are_extracted() -> None:
    parsed = parse_issue(TRACEBACK_ISSUE)
    assert parsed.title.startswith("Dataset.to_json_dict can still raise")
    assert [(f.path, f.line, f.function) for f in parsed.frames] == [
        ("dicom.py", 143, "create_dict"),
        ("/usr/lib/python3/dist-packages/pydicom/dataset.py", 2495, "to_json_dict"),
        ("/usr/lib/python3/dist-packages/click/core.py", 763, "invoke"),
        ("/usr/lib/python3/dist-packages/pydicom/valuerep.py", 1131, "__new__"),
    ]
    # the message is cut at the quote: the run-time value '2.0' is not a literal
    assert parsed.literals == ["Could not convert value to integer without loss"]
    assert parsed.symbols["TypeError"] == 1.0
    # frame lines are left out of the body (their site-packages paths are noise)
    assert "dist-packages" not in parsed.body and "File " not in parsed.body
    assert "data_element = self[key]" in parsed.body


def test_dotted_names_split_into_parts_and_code_symbols_weigh_less() -> None:
    parsed = parse_issue("title\nCalling `io.mod.Parser.parse_line` fails\n```\nrun_it(x)\n```")
    for part in ("mod", "Parser", "parse_line"):
        assert parsed.symbols[part] == 1.0
    assert "io.mod.Parser.parse_line" in parsed.modules
    assert parsed.symbols["run_it"] == 0.5  # only inside fenced code
    assert "io" not in parsed.symbols  # too short for a term


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("parse_json_line", True),
        ("_private", True),
        ("HTTPServer", True),
        ("parseJson", True),
        ("utf8", True),
        ("CONSTANT", True),
        ("Dataset", False),
        ("API", False),
        ("report", False),
        ("__", False),
    ],
)
def test_is_identifier(word: str, expected: bool) -> None:
    assert is_identifier(word) is expected


def test_backticked_sentence_is_not_taken_word_by_word() -> None:
    parsed = parse_issue("t\nRun `pip install pylint astroid` then `ParseError`")
    assert "ParseError" in parsed.symbols
    assert not {"install", "pylint", "astroid"} & set(parsed.symbols)


def test_quoted_prose_message_becomes_a_literal() -> None:
    parsed = parse_issue('L031 triggers "Avoid using aliases in join condition" wrongly')
    assert parsed.literals == ["Avoid using aliases in join condition"]


# -- resolving against a snapshot ----------------------------------------------------------


def test_paths_map_onto_the_snapshot_by_longest_suffix() -> None:
    reader = IssueReader(SNAPSHOT)
    assert reader.resolve_path("/usr/lib/python3/dist-packages/pydicom/dataset.py") == [
        "pydicom/dataset.py"
    ]
    assert reader.resolve_path("C:\\env\\Lib\\site-packages\\pydicom\\valuerep.py") == [
        "pydicom/valuerep.py"
    ]
    # another package's core.py must not land on the snapshot's pydicom/core.py
    assert reader.resolve_path("/usr/lib/python3/dist-packages/click/core.py") == []
    assert reader.resolve_path("L031.py") == ["src/sqlfluff/rules/L031.py"]  # a bare name
    assert reader.resolve_path("/home/me/proj/setup.py") == ["setup.py"]  # whole path matched
    assert reader.resolve_path("dicom.py") == []


def test_an_ambiguous_bare_name_names_nothing() -> None:
    reader = IssueReader([f"pkg{i}/__init__.py" for i in range(5)] + ["x/y.py", "z/y.py"])
    assert reader.resolve_path("__init__.py") == []
    assert reader.resolve_path("y.py") == ["x/y.py", "z/y.py"]  # 2 ≤ MAX_AMBIGUOUS


def test_dotted_modules_map_to_files() -> None:
    reader = IssueReader(["pvlib/temperature.py", "pvlib/bifacial/__init__.py", "pvlib/tools.py"])
    assert reader.resolve_module("pvlib.temperature.fuentes") == ["pvlib/temperature.py"]
    assert reader.resolve_module("pvlib.bifacial") == ["pvlib/bifacial/__init__.py"]
    assert reader.resolve_module("pvlib") == []  # a bare package names no file
    assert reader.resolve_module("np.array") == []


def test_read_weighs_named_files_and_keeps_only_snapshot_frames() -> None:
    issue = IssueReader(SNAPSHOT).read(TRACEBACK_ISSUE)
    assert issue.paths["pydicom/dataset.py"] == 1.0
    assert issue.paths["pydicom/valuerep.py"] == 1.0
    assert "pydicom/core.py" not in issue.paths  # click's core.py
    symbols = issue.parsed.symbols
    assert symbols["to_json_dict"] == 1.0 and symbols["__new__"] == 1.0
    assert "create_dict" not in symbols and "invoke" not in symbols  # frames outside


def test_terms_put_the_strongest_sources_first() -> None:
    issue = IssueReader(SNAPSHOT).read(TRACEBACK_ISSUE)
    terms = issue.terms()
    weights = list(terms.values())
    assert weights == sorted(weights, reverse=True)
    assert "Could not convert value to integer without loss" in terms


# -- the weighted bag and definitions ----------------------------------------------------


def test_issue_bag_upweights_symbols_and_truncates_the_body() -> None:
    tok = CodeTokenizer()
    issue = IssueReader([]).read("Crash in parse_line\n" + "words " * 50 + "`frobnicate` here")
    plain = issue_bag(issue, tok, symbol_weight=0.0)
    weighted = issue_bag(issue, tok, symbol_weight=3.0)
    assert weighted["frobnicate"] == plain["frobnicate"] + 3.0
    assert plain["words"] == 50
    cut = issue_bag(issue, tok, symbol_weight=0.0, body_tokens=10)
    assert cut["words"] == 10 and "frobnicate" not in cut


def test_issue_bag_weighs_whole_identifiers_unless_parts_are_asked_for() -> None:
    tok = CodeTokenizer()
    issue = IssueReader([]).read("Crash\n`parse_json_line` fails")
    base = issue_bag(issue, tok, symbol_weight=0.0)
    whole = issue_bag(issue, tok, symbol_weight=2.0)
    parts = issue_bag(issue, tok, symbol_weight=2.0, symbol_parts=True)
    assert whole["parse_json_line"] == base["parse_json_line"] + 2.0
    assert whole["json"] == base["json"]  # the parts keep their text weight
    assert parts["json"] == base["json"] + 2.0


@pytest.mark.parametrize(
    ("line", "term", "expected"),
    [
        ("def parse_line(raw):", "parse_line", True),
        ("    async def parse_line(self):", "parse_line", True),
        ("class Parser(Base):", "Parser", True),
        ("PARSER_LIMIT = 10", "PARSER_LIMIT", True),
        ("registry: dict[str, int] = {}", "registry", True),
        ("    result = parse_line(x)", "parse_line", False),
        ("    parse_line = cached(parse_line)", "parse_line", False),  # indented: local
        ("if parse_line == other:", "parse_line", False),
        ("parse_line == other", "parse_line", False),  # a comparison, not an assignment
        ("def parse_lines(raw):", "parse_line", False),
        ("class parser:", "Parser", True),
    ],
)
def test_defines_tells_a_definition_from_a_mention(line: str, term: str, expected: bool) -> None:
    assert defines(line, term) is expected


_PIECES = ["def", "DEF", "class", "async", "fn", "type", "export", "const", "let", " ", "\t",
           "=", "==", ":", "(", "x", "Parser", "parse_line", "int", "# c"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=8),
    st.sampled_from(["x", "Parser", "parse_line", "parser"]),
    st.booleans(),
)
def test_a_line_may_define_tells_no_lie(pieces: list[str], term: str, ignore_case: bool) -> None:
    """``may_define`` is only a filter: a line it rules out defines no term."""
    line = "".join(pieces)
    if not may_define(line):
        assert not defines(line, term, ignore_case)


def test_definition_case_sensitivity() -> None:
    assert not defines("class parser:", "Parser", ignore_case=False)


# -- bm25 query: issue ------------------------------------------------------------------------


def _corpus(root: Path, files: dict[str, str]) -> Corpus:
    chunks = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        chunks += window_chunks(SourceFile(rel, text, "python"), 400)
    return Corpus(root, chunks)


PROSE = "the report shows the value the widget the output the value the widget " * 20

FILES = {
    "pkg/engine.py": "def run_engine(x):\n    return helper(x)\n",
    "pkg/widget.py": "# the value of the widget and its output\nWIDGET = 'value output widget'\n",
    "pkg/helpers.py": "def helper(x):\n    raise RuntimeError('cannot frobnicate the input')\n",
}
ISSUE = (
    "Widget crashes\n"
    + PROSE
    + '\nTraceback:\n  File "/site-packages/pkg/helpers.py", line 2, in helper\n'
    + "RuntimeError: cannot frobnicate the input\n"
)


def test_bm25_issue_query_with_path_boost_ranks_the_named_file_first(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    raw = BM25Retriever()
    raw.index(corpus)
    boosted = BM25Retriever(query="issue", path_boost=1.0)
    boosted.index(corpus)
    first = {
        name: corpus.by_id[next(iter(r.search({"q": ISSUE}, 5).scores["q"]))].path
        for name, r in (("raw", raw), ("issue", boosted))
    }
    assert first == {"raw": "pkg/widget.py", "issue": "pkg/helpers.py"}


def test_bm25_raw_query_is_unchanged_by_the_issue_options(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    a, b = BM25Retriever(), BM25Retriever(symbol_weight=9.0, path_boost=3.0)
    a.index(corpus)
    b.index(corpus)
    assert a.search({"q": ISSUE}, 5).scores == b.search({"q": ISSUE}, 5).scores


@pytest.mark.parametrize("method", ["lucene", "atire", "bm25+"])
def test_weighted_scores_equal_repeated_query_tokens(tmp_path: Path, method: str) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = BM25Retriever(method=method, dtype="float64")
    r.index(corpus)
    vocab = r._vocab
    ids = [vocab["helper"], vocab["helper"], vocab["widget"]]
    assert r._model is not None
    expected = np.asarray(r._model.get_scores_from_ids(ids))
    got = r.weighted_scores({vocab["helper"]: 2.0, vocab["widget"]: 1.0})
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_bm25_rejects_an_unknown_query_mode() -> None:
    with pytest.raises(ConfigError, match="query 'issues'"):
        BM25Retriever(query="issues")
    with pytest.raises(ConfigError, match=">= 0"):
        BM25Retriever(query="issue", path_boost=-1)


# -- exact terms: issue ----------------------------------------------------------------------


def _rg_available() -> bool:
    try:
        find_rg()
    except ToolMissingError:  # pragma: no cover - the venv ships rg
        return False
    return True


needs_rg = pytest.mark.skipif(not _rg_available(), reason="ripgrep is not installed")

DEF_FILES = {
    "lib/defs.py": "def frobnicate(x):\n    return x\n",
    "lib/uses.py": "from lib.defs import frobnicate\n\nA = frobnicate(1)\nB = frobnicate(2)\n",
    "lib/other.py": "VALUE = 3\n",
}


@needs_rg
def test_exact_issue_scores_a_definition_above_a_mention(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, DEF_FILES)
    query = {"q": "Crash\nCalling `frobnicate` fails"}

    def ranked_files(def_weight: float) -> list[str]:
        r = ExactRetriever(terms="issue", def_weight=def_weight)
        r.index(corpus)
        return [corpus.by_id[c].path for c in r.search(query, 5).scores["q"]]

    assert ranked_files(1.0) == ["lib/defs.py", "lib/uses.py"]
    # without the definition bonus the file with more matching lines wins (line bonus)
    assert ranked_files(0.0) == ["lib/uses.py", "lib/defs.py"]


@needs_rg
def test_exact_issue_ranks_a_named_file_without_a_term_match(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, DEF_FILES)
    query = {"q": 'Crash\n  File "/venv/site-packages/lib/other.py", line 1, in <module>\n'}
    r = ExactRetriever(terms="issue", path_weight=1.0)
    r.index(corpus)
    run = r.search(query, 5).scores["q"]
    assert [corpus.by_id[c].path for c in run] == ["lib/other.py"]
    assert r.artifacts["q"]["named_files"] == {"lib/other.py": 1.0}
    r0 = ExactRetriever(terms="issue", path_weight=0.0)
    r0.index(corpus)
    assert "lib/other.py" not in [corpus.by_id[c].path for c in r0.search(query, 5).scores["q"]]


def test_exact_accepts_the_issue_rung_and_rejects_unknown_ones() -> None:
    assert ExactRetriever(terms="issue").config()["def_weight"] == 1.0
    with pytest.raises(ConfigError, match="issue"):
        ExactRetriever(terms="issues")

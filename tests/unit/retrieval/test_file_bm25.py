"""``bm25-files``: files ranked as whole documents or by aggregated chunk scores."""

from __future__ import annotations

from pathlib import Path

import bm25s
import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.files import SourceFile
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.file_bm25 import (
    FileBM25Retriever,
    aggregate_scores,
    file_text,
    is_test_path,
)
from retrieval_bench.runs.file_ids import file_path
from tests.unit.retrieval.conftest import window_chunks


def _corpus(root: Path, files: dict[str, str], size: int = 3) -> Corpus:
    chunks = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        chunks += window_chunks(SourceFile(rel, text, "python"), size)
    return Corpus(root, chunks)


# one strong chunk vs. many weak ones: the aggregations disagree on purpose
FILES = {
    "app/strong.py": "def checkout():\n    charge charge charge refund\n    return 1\n"
    + "\n".join(f"def f{i}():\n    return {i}\n" for i in range(12)),
    "app/spread.py": "\n".join(
        f"def g{i}():\n    charge({i})\n    return None\n" for i in range(6)
    ),
    "services/payment.py": "def start():\n    return connect()\n",
    "app/other.py": "def nothing():\n    return 0\n",
}


def test_aggregate_scores_by_hand() -> None:
    pairs = [("a", 3.0), ("b", 1.0), ("a", 1.0), ("b", 1.0), ("b", 1.0), ("a", 0.5)]
    assert aggregate_scores(pairs, "max") == {"a": 3.0, "b": 1.0}
    assert aggregate_scores(pairs, "sum") == {"a": 4.5, "b": 3.0}
    assert aggregate_scores(pairs, "mean", top_m=2) == {"a": 2.0, "b": 1.0}
    # fewer than m chunks count as zeros: one chunk of 3.0 gives 1.0 at m = 3
    assert aggregate_scores([("c", 3.0)], "mean", top_m=3) == {"c": 1.0}
    assert aggregate_scores(pairs, "mean", top_m=1) == aggregate_scores(pairs, "max")
    with pytest.raises(ValueError, match="median"):
        aggregate_scores(pairs, "median")


def test_whole_file_documents_return_file_ids_once_each(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = FileBM25Retriever()
    r.index(corpus)
    scores = r.search({"q": "charge refund"}, 10).scores["q"]
    paths = [file_path(d) for d in scores]
    assert None not in paths and len(paths) == len(set(paths))
    assert set(paths) == {"app/strong.py", "app/spread.py"}


def test_whole_file_scores_equal_an_independent_bm25s_index(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = FileBM25Retriever()
    r.index(corpus)
    tok = CodeTokenizer()
    paths = corpus.paths
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index([tok(file_text(corpus, p)) + tok(p) for p in paths], show_progress=False)
    query = ["charge", "refund", "payment"]
    expected = ref.get_scores(query)
    got = r.search({"q": " ".join(query)}, 10).scores["q"]
    for i, p in enumerate(paths):
        if expected[i] > 0:
            assert got[f"file:{p}"] == pytest.approx(float(expected[i]), rel=1e-6)
        else:
            assert f"file:{p}" not in got


def test_path_tokens_are_searchable(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = FileBM25Retriever()
    r.index(corpus)
    assert list(r.search({"q": "payment"}, 5).scores["q"]) == ["file:services/payment.py"]
    no_path = FileBM25Retriever(include_path=False)
    no_path.index(corpus)
    assert no_path.search({"q": "payment"}, 5).scores["q"] == {}


@pytest.mark.parametrize(
    ("aggregate", "top_m", "first"),
    [("max", 3, "app/strong.py"), ("sum", 3, "app/spread.py"), ("mean", 6, "app/spread.py")],
)
def test_chunk_aggregation_decides_the_file_order(
    tmp_path: Path, aggregate: str, top_m: int, first: str
) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = FileBM25Retriever(doc="chunks", aggregate=aggregate, top_m=top_m)
    r.index(corpus)
    ranked = [file_path(d) for d in r.search({"q": "charge refund"}, 5).scores["q"]]
    assert ranked[0] == first
    assert set(ranked) == {"app/strong.py", "app/spread.py"}


def test_chunk_max_equals_the_best_chunk_of_chunk_bm25(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    r = FileBM25Retriever(doc="chunks", aggregate="max")
    r.index(corpus)
    chunk_run = BM25Retriever()
    chunk_run.index(corpus)
    best: dict[str, float] = {}
    for cid, s in chunk_run.search({"q": "charge refund"}, 100).scores["q"].items():
        path = corpus.by_id[cid].path
        best[path] = max(best.get(path, 0.0), s)
    got = r.search({"q": "charge refund"}, 10).scores["q"]
    assert got == pytest.approx({f"file:{p}": s for p, s in best.items()})


def test_path_boost_lifts_a_named_file_at_file_level(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, FILES)
    # no token of the issue is in app/other.py (its path tokens are not indexed), so
    # only the bonus can bring it in
    issue = 'charge fails\n  File "/venv/site-packages/app/other.py", line 2, in <module>\n'
    for doc in ("file", "chunks"):
        plain = FileBM25Retriever(doc=doc, query="issue", include_path=False)
        plain.index(corpus)
        assert "file:app/other.py" not in plain.search({"q": issue}, 5).scores["q"]
        boosted = FileBM25Retriever(doc=doc, query="issue", include_path=False, path_boost=1.0)
        boosted.index(corpus)
        assert next(iter(boosted.search({"q": issue}, 5).scores["q"])) == "file:app/other.py"


def test_file_text_falls_back_to_the_chunks(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"a.py": "x = 1\ny = 2\nz = 3\nw = 4\n"}, size=2)
    (tmp_path / "a.py").unlink()
    assert file_text(corpus, "a.py") == "x = 1\ny = 2\nz = 3\nw = 4"


def test_bad_parameters_fail_with_the_key() -> None:
    with pytest.raises(ConfigError, match="doc 'files'"):
        FileBM25Retriever(doc="files")
    with pytest.raises(ConfigError, match="aggregate 'avg'"):
        FileBM25Retriever(aggregate="avg")
    with pytest.raises(ConfigError, match="top_m"):
        FileBM25Retriever(top_m=0)
    with pytest.raises(ConfigError, match="unknown parameter 'docs'"):
        FileBM25Retriever(docs="file")


def test_params_nest_bm25s() -> None:
    """``bm25-files``' ``Params`` are ``bm25``'s plus its own; the inner ``bm25`` gets
    every one of them but ``path_boost`` (added per file)."""
    assert issubclass(FileBM25Retriever.Params, BM25Retriever.Params)
    own = set(FileBM25Retriever.Params.model_fields) - set(BM25Retriever.Params.model_fields)
    assert own == {"doc", "aggregate", "top_m", "test_weight"}
    r = FileBM25Retriever(k1=1.2, dtype="float64", query="issue", path_boost=2.0, name="ff")
    assert r.bm25.params == BM25Retriever.Params(k1=1.2, dtype="float64", query="issue")
    assert (r.name, r.bm25.name, r.path_boost, r.bm25.path_boost) == ("ff", "ff", 2.0, 0.0)
    with pytest.raises(ConfigError, match="bm25: method 'okapi'"):
        FileBM25Retriever(method="okapi")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_app.py", True),
        ("testing/python/collect.py", True),
        ("src/pkg/test_utils.py", True),
        ("src/pkg/conftest.py", True),
        ("pkg/io_test.py", True),
        ("src/_pytest/python_api.py", False),
        ("src/contest.py", False),
        ("src/attest/latest.py", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_test_weight_demotes_or_drops_test_files(tmp_path: Path) -> None:
    files = {
        "tests/test_charge.py": "def test_charge():\n    charge charge refund\n",
        "app/pay.py": "def pay():\n    refund()\n",
    }
    corpus = _corpus(tmp_path, files)

    def ranked(weight: float) -> dict[str, float]:
        r = FileBM25Retriever(test_weight=weight)
        r.index(corpus)
        return r.search({"q": "charge refund"}, 5).scores["q"]

    keep, half, drop = ranked(1.0), ranked(0.5), ranked(0.0)
    assert list(keep) == ["file:tests/test_charge.py", "file:app/pay.py"]
    assert half["file:tests/test_charge.py"] == pytest.approx(keep["file:tests/test_charge.py"] / 2)
    assert list(drop) == ["file:app/pay.py"]
    with pytest.raises(ConfigError, match="test_weight"):
        FileBM25Retriever(test_weight=2.0)

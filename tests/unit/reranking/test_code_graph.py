"""``code-graph``: input files plus what their imports/calls and the issue's symbols
lead to, scored s_in + import_weight·imp + issue_weight·iss (docs/stages.md#code-structure)."""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.params import StageServices
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.reranking.code_graph import CodeGraphReranker, minmax
from retrieval_bench.retrieval.code_graph_index import graph_index
from retrieval_bench.types import Run
from tests.unit.retrieval.test_code_graph_index import REPO, write_repo


@pytest.fixture
def shop(tmp_path: Path) -> Corpus:
    return write_repo(tmp_path)


def files_run(scores: dict[str, float], qid: str = "q") -> Run:
    return Run("files-issue", {qid: {f"file:{p}": s for p, s in scores.items()}})


def rerank(
    corpus: Corpus,
    scores: dict[str, float],
    query: str = "Checkout is wrong",
    k: int = 50,
    **kw: Any,
) -> dict[str, float]:
    return CodeGraphReranker(**kw).rerank({"q": query}, files_run(scores), corpus, k).scores["q"]


def ranked(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def test_minmax() -> None:
    assert minmax({"a": 3.0, "b": 1.0, "c": 2.0}) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert minmax({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    assert minmax({}) == {}


def test_imported_files_are_pulled_into_the_ranking(shop: Corpus) -> None:
    inp = {"src/shop/cart.py": 3.0, "README.md": 2.0, "src/shop/mention.py": 1.0}
    got = rerank(shop, inp, top_n=1, import_weight=0.5, issue_weight=0)
    # s_in: cart 1, README .5, mention 0; cart imports pricing, money (src/ layout)
    # and tax (alias), each gaining 0.5 · s_in(cart) · 1
    assert ranked(got) == [
        ("file:src/shop/cart.py", 1.0),
        ("file:README.md", 0.5),
        ("file:src/shop/pricing.py", 0.5),
        ("file:src/shop/tax.py", 0.5),
        ("file:src/shop/util/money.py", 0.5),
        ("file:src/shop/mention.py", 0.0),
    ]
    # without the graph the input order stays, on the normalised scale
    assert rerank(shop, inp, import_weight=0, issue_weight=0) == {
        "file:src/shop/cart.py": 1.0,
        "file:README.md": 0.5,
        "file:src/shop/mention.py": 0.0,
    }


def test_call_edges_count_call_weight_and_ties_break_by_id(shop: Corpus) -> None:
    inp = {"src/shop/report.py": 2.0, "README.md": 1.0}
    got = rerank(shop, inp, import_weight=1.0, call_weight=0.5, issue_weight=0)
    # report imports Cart (re-exported by shop/__init__.py → cart.py: 1) and calls
    # cart.render_summary() (defined once, in render.py: 0.5 · 1)
    assert ranked(got) == [
        ("file:src/shop/cart.py", 1.0),
        ("file:src/shop/report.py", 1.0),
        ("file:src/shop/render.py", 0.5),
        ("file:README.md", 0.0),
    ]
    no_calls = rerank(shop, inp, import_weight=1.0, call_weight=0, issue_weight=0)
    assert "file:src/shop/render.py" not in no_calls


def test_only_the_top_n_input_files_are_followed(shop: Corpus) -> None:
    inp = {"README.md": 4.0, "src/shop/pricing.py": 3.0, "src/shop/cart.py": 2.0, "x.py": 1.0}
    # s_in: README 1, pricing 2/3, cart 1/3; cart is third: followed with top_n 3, not 2
    assert "file:src/shop/tax.py" not in rerank(shop, inp, top_n=2, issue_weight=0)
    three = rerank(shop, inp, top_n=3, import_weight=1.0, issue_weight=0)
    assert three["file:src/shop/tax.py"] == pytest.approx(1 / 3)
    assert three["file:src/shop/pricing.py"] == pytest.approx(2 / 3 + 1 / 3)
    assert three["file:src/shop/cart.py"] == pytest.approx(1 / 3)  # pricing imports nothing
    assert rerank(shop, inp, top_n=0, import_weight=1.0, issue_weight=0) == rerank(
        shop, inp, import_weight=0, issue_weight=0
    )


def test_issue_symbols_boost_definers_not_mentioners(shop: Corpus) -> None:
    inp = {"README.md": 2.0, "src/shop/mention.py": 1.0}
    issue = "apply_discount returns the wrong price"
    got = rerank(shop, inp, issue, import_weight=0, issue_weight=1.0)
    assert ranked(got) == [
        ("file:README.md", 1.0),
        ("file:src/shop/discount.py", 1.0),  # defines it, defined nowhere else: idf 1
        ("file:src/shop/mention.py", 0.0),  # only calls it
    ]
    # named only inside fenced code: source weight 0.5
    fenced = "Discount is wrong\n```\nprint(apply_discount(3))\n```\n"
    got = rerank(shop, inp, fenced, import_weight=0, issue_weight=1.0)
    assert got["file:src/shop/discount.py"] == 0.5
    # a dunder names no file in particular, even where one defines it
    files = dict(REPO, **{"src/shop/pricing.py": "def __init__():\n    pass\n"})
    corpus = write_repo(shop.root / "dunder", files)
    got = rerank(corpus, inp, "`__init__` is broken", import_weight=0, issue_weight=1.0)
    assert "file:src/shop/pricing.py" not in got


def test_input_weight_zero_keeps_one_relation(shop: Corpus) -> None:
    """input_weight 0: the stage is one graph relation, only the files it reaches."""
    inp = {"src/shop/cart.py": 3.0, "README.md": 2.0, "src/shop/mention.py": 1.0}
    imports = rerank(shop, inp, top_n=1, input_weight=0, import_weight=1.0, issue_weight=0)
    # cart (the top file) imports pricing, money and tax: 1 · s_in(cart) · 1 each
    assert ranked(imports) == [
        ("file:src/shop/pricing.py", 1.0),
        ("file:src/shop/tax.py", 1.0),
        ("file:src/shop/util/money.py", 1.0),
    ]
    issue = "apply_discount returns the wrong price"
    defines = rerank(shop, inp, issue, input_weight=0, import_weight=0, issue_weight=1.0)
    assert defines == {"file:src/shop/discount.py": 1.0}
    # a half weight on the input adds it back, scaled
    half = rerank(shop, inp, issue, input_weight=0.5, import_weight=0, issue_weight=1.0)
    assert ranked(half) == [
        ("file:src/shop/discount.py", 1.0),
        ("file:src/shop/cart.py", 0.5),
        ("file:README.md", 0.25),
        ("file:src/shop/mention.py", 0.0),
    ]


def test_issue_symbols_weigh_by_rarity(tmp_path: Path) -> None:
    corpus = write_repo(
        tmp_path, dict(REPO, **{"src/shop/alt.py": "def total(c):\n    return 0\n"})
    )
    issue = "`total` disagrees with `render_summary`"
    got = rerank(corpus, {"README.md": 1.0}, issue, import_weight=0, issue_weight=1.0)
    n = len(graph_index(corpus).facts)
    two = math.log(1 + n / 2) / math.log(1 + n)
    assert got == pytest.approx(
        {
            "file:README.md": 1.0,
            "file:src/shop/render.py": 1.0,
            "file:src/shop/pricing.py": two,
            "file:src/shop/alt.py": two,
        }
    )


def test_a_file_that_does_not_parse_is_skipped(shop: Corpus) -> None:
    inp = {"src/shop/broken.py": 2.0, "src/shop/cart.py": 1.0}
    got = rerank(shop, inp, top_n=1, import_weight=1.0, issue_weight=1.0, query="oops fails")
    assert got == {"file:src/shop/broken.py": 1.0, "file:src/shop/cart.py": 0.0}


def test_test_weight_scales_or_drops_test_files(shop: Corpus) -> None:
    inp = {"tests/test_cart.py": 2.0, "src/shop/pricing.py": 1.0}
    kw: dict[str, Any] = {"top_n": 1, "import_weight": 0.5, "issue_weight": 0}
    assert rerank(shop, inp, test_weight=0, **kw) == {
        "file:src/shop/cart.py": 0.5,  # still followed from the dropped test file
        "file:src/shop/pricing.py": 0.0,
    }
    assert rerank(shop, inp, test_weight=0.5, **kw)["file:tests/test_cart.py"] == 0.5


def test_a_chunk_run_is_lifted_to_files_by_its_best_chunk(shop: Corpus) -> None:
    def best(path: str, score: float) -> dict[str, float]:
        cs = shop.chunks_of(path)
        return {cs[0].id: score, **{c.id: score / 10 for c in cs[1:]}}

    chunks = {**best("src/shop/cart.py", 3.0), **best("README.md", 2.0)}
    chunks.update(best("src/shop/mention.py", 1.0))
    out = CodeGraphReranker(top_n=1).rerank({"q": "x"}, Run("bm25", {"q": chunks}), shop, 50)
    inp = {"src/shop/cart.py": 3.0, "README.md": 2.0, "src/shop/mention.py": 1.0}
    assert out.scores["q"] == rerank(shop, inp, "x", top_n=1)
    assert all(d.startswith("file:") for d in out.scores["q"])


def test_k_artifacts_and_empty_inputs(shop: Corpus) -> None:
    rr = CodeGraphReranker(top_n=1, import_weight=0.5, issue_weight=0)
    run = files_run({"src/shop/cart.py": 3.0, "README.md": 2.0})
    out = rr.rerank({"q": "", "none": "x"}, Run("in", {**run.scores, "none": {}}), shop, 2)
    # cart 1, then three imports at 0.5 · 1 (README, s_in 0, falls below k = 2)
    assert out.scores["q"] == {"file:src/shop/cart.py": 1.0, "file:src/shop/pricing.py": 0.5}
    assert out.scores["none"] == {} and rr.failures == {}
    record = rr.artifacts["q"]
    assert record["parents"] == ["src/shop/cart.py"]
    assert [b["path"] for b in record["boosted"]] == ["src/shop/pricing.py"]  # only those kept
    rr.rerank({"q": ""}, run, shop, 50)
    via = {b["path"]: b["via"] for b in rr.artifacts["q"]["boosted"]}
    assert via == dict.fromkeys(
        ["src/shop/pricing.py", "src/shop/tax.py", "src/shop/util/money.py"], "src/shop/cart.py"
    )


def test_deterministic_picklable_and_per_corpus(tmp_path: Path) -> None:
    one = write_repo(tmp_path / "one")
    other_files = {"src/shop/cart.py": REPO["src/shop/cart.py"], "lib/pricing.py": "X = 1\n"}
    other = write_repo(tmp_path / "other", other_files)
    inp = {"src/shop/cart.py": 2.0, "README.md": 1.0}
    issue = "apply_discount and total fail"
    rr = CodeGraphReranker()
    first = rr.rerank({"q": issue}, files_run(inp), one, 50).scores
    assert rr.rerank({"q": issue}, files_run(inp), other, 50).scores == (
        CodeGraphReranker().rerank({"q": issue}, files_run(inp), other, 50).scores
    )
    again = pickle.loads(pickle.dumps(rr)).rerank({"q": issue}, files_run(inp), one, 50)
    assert again.scores == first
    assert "file:src/shop/pricing.py" in first["q"]
    assert (
        "file:src/shop/pricing.py"
        not in (rr.rerank({"q": issue}, files_run(inp), other, 50).scores["q"])
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"top_n": -1}, "top_n must be an integer >= 0"),
        ({"top_n": True}, "top_n must be an integer >= 0, not True"),
        ({"top_n": 2.5}, r"top_n must be an integer >= 0, not 2\.5"),
        ({"import_weight": -0.1}, "import_weight must be a number >= 0"),
        ({"input_weight": -1}, "input_weight must be a number >= 0"),
        ({"issue_weight": math.nan}, "issue_weight must be a number >= 0, not nan"),
        ({"issue_weight": "1"}, "issue_weight must be a number >= 0, not '1'"),
        ({"import_weight": False}, "import_weight must be a number >= 0, not False"),
        ({"call_weight": 1.5}, r"call_weight must be in \[0, 1\]"),
        ({"test_weight": 2}, r"test_weight must be in \[0, 1\]"),
        ({"depth": 2}, "unknown parameter 'depth'"),
    ],
)
def test_parameters_are_checked(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registry.create("rerankers", "code-graph", **params)


def test_registered_without_llm() -> None:
    rr = registry.create("rerankers", "code-graph", top_n=0)
    assert isinstance(rr, CodeGraphReranker) and rr.name == "code-graph" and rr.top_n == 0
    assert rr.facts_cache is None
    assert CodeGraphReranker(top_n=0, name="graph").name == "graph"
    with pytest.raises(ConfigError, match="unknown parameter 'name'"):
        registry.create("rerankers", "code-graph", name="graph")
    assert not registry.RERANKERS.type_of("code-graph").needs_llm


def test_params_and_services(tmp_path: Path) -> None:
    """The facts cache comes from the harness's services; an integer weight reads as a
    float, so config() (a cache and provenance key) is what it was."""
    services = StageServices(facts_cache=str(tmp_path))
    rr = registry.RERANKERS.create("code-graph", {"input_weight": 2, "top_n": 3}, services)
    assert isinstance(rr, CodeGraphReranker) and rr.facts_cache == str(tmp_path)
    assert rr.config() == {
        "top_n": 3,
        "input_weight": 2.0,
        "import_weight": 0.1,
        "issue_weight": 0.1,
        "call_weight": 0.5,
        "test_weight": 1.0,
    }
    assert type(rr.config()["input_weight"]) is float
    assert CodeGraphReranker(rr.params).config() == rr.config()

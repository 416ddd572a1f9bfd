"""FuzzyRetriever, embedded tantivy backend: typo budget, typo'd queries, ranking, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import retrieval_bench
from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.fuzzy import FuzzyRetriever, osa_distance
from retrieval_bench.retrieval.typo_budget import TypoBudget
from retrieval_bench.types import Chunk
from tests.unit.retrieval.conftest import window_corpus


def _chunk(cid: str, path: str, text: str) -> Chunk:
    return Chunk(cid, path, 1, text.count("\n") + 1, "python", "function", None, text)


CHUNKS = [
    _chunk("a", "src/json_utils.py", "def parse_json(line):\n    return json.loads(line)"),
    _chunk("b", "src/auth.py", "def check_authentication(user, token):\n    return token.ok"),
    _chunk("c", "src/billing.py", "def charge(order, amount):\n    return gateway.charge(amount)"),
    _chunk("d", "src/notes.py", "# authentcation authentcation: a misspelling kept in a comment"),
    _chunk("e", "src/config.py", "def parse_yaml(path):\n    return yaml.safe_load(path)"),
    _chunk("f", "docs/empty.md", "..."),
]


@pytest.fixture(scope="module")
def fuzzy() -> FuzzyRetriever:
    retriever = FuzzyRetriever()
    retriever.index(Corpus(Path("."), list(CHUNKS)))
    return retriever


@pytest.mark.parametrize(
    ("length", "typos"),
    [(1, 0), (2, 0), (3, 0), (4, 0), (5, 1), (6, 1), (7, 1), (8, 1), (9, 2), (10, 2), (30, 2)],
)
def test_default_budget_table(length: int, typos: int) -> None:
    assert TypoBudget().distance("x" * length) == typos


def test_custom_budget_and_forms() -> None:
    budget = TypoBudget.of({"one_typo": 3, "two_typos": 6})
    assert [budget.distance("x" * n) for n in range(1, 8)] == [0, 0, 1, 1, 1, 2, 2]
    assert TypoBudget.of([3, 6]) == budget == TypoBudget.of({"oneTypo": 3, "twoTypos": 6})
    assert TypoBudget.of(None) == TypoBudget(5, 9)


@pytest.mark.parametrize("bad", [[6, 3], [0, 4], {"one": 5}, "5,9", [1, 2, 3], [5, 300]])
def test_bad_budget_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="typo_budget"):
        FuzzyRetriever(typo_budget=bad)


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("parse", "parse", 0),
        ("parse", "pasre", 1),  # transposition counts once
        ("parse", "parsed", 1),
        ("parse", "prse", 1),
        ("parse_json", "pasre_jsno", 2),
        ("kitten", "sitting", 3),
        ("ca", "abc", 3),  # optimal string alignment, not full Damerau (which gives 2)
        ("", "ab", 2),
    ],
)
def test_osa_distance(a: str, b: str, distance: int) -> None:
    assert osa_distance(a, b) == distance == osa_distance(b, a)


def test_first_character_is_not_fuzzed_by_default() -> None:
    corpus = Corpus(Path("."), list(CHUNKS))
    default, anywhere = FuzzyRetriever(), FuzzyRetriever(fuzzy_first_char=True)
    default.index(corpus)
    anywhere.index(corpus)
    queries = {"first": "barse", "later": "pbrse"}  # one substitution each
    assert default.search(queries, 3).ids("first") == []
    assert sorted(anywhere.search(queries, 3).ids("first")) == ["a", "e"]
    assert sorted(default.search(queries, 3).ids("later")) == ["a", "e"]
    assert anywhere.config()["fuzzy_first_char"] is True


def test_one_typo_queries_find_their_chunk(fuzzy: FuzzyRetriever) -> None:
    run = fuzzy.search({"swap": "pasre_json", "drop": "authentcation", "two": "chrage amuont"}, 3)
    assert run.ids("swap")[0] == "a"
    assert run.ids("drop")[0] == "d"  # the misspelling exists verbatim in d: exact first
    assert "b" in run.ids("drop")  # ... and one edit away in b
    assert run.ids("two") == ["c"]


def test_typo_query_without_exact_match_in_corpus(fuzzy: FuzzyRetriever) -> None:
    run = fuzzy.search({"q": "how is authenticatoin checked"}, 3)
    assert run.ids("q")[0] == "b"


def test_exact_match_ranks_above_fuzzy(fuzzy: FuzzyRetriever) -> None:
    # d holds the rarer misspelling twice (higher idf and tf), yet the exact word wins.
    run = fuzzy.search({"q": "authentication"}, 5)
    assert run.ids("q") == ["b", "d"]
    assert run.scores["q"]["b"] > run.scores["q"]["d"]


def test_two_typos_only_for_long_terms(fuzzy: FuzzyRetriever) -> None:
    run = fuzzy.search({"long": "authentcatoin", "mid": "cahrgf", "mid1": "chargf"}, 3)
    assert "b" in run.ids("long")  # 13 chars: deletion + transposition allowed
    assert run.ids("mid") == []  # 6 chars, two edits: over budget
    assert run.ids("mid1") == ["c"]  # 6 chars, one edit


def test_short_terms_are_not_fuzzed(fuzzy: FuzzyRetriever) -> None:
    assert fuzzy._tantivy is not None
    assert fuzzy._tantivy.expansions("jsno") == []  # 4 chars: exact only
    assert fuzzy._tantivy.expansions("json") == [("json", 0)]
    run = fuzzy.search({"q": "jsno yml"}, 5)
    assert run.ids("q") == []


def test_custom_budget_fuzzes_short_terms() -> None:
    retriever = FuzzyRetriever(typo_budget=[4, 9])
    retriever.index(Corpus(Path("."), list(CHUNKS)))
    assert retriever.search({"q": "jsno"}, 3).ids("q") == ["a"]


def test_expansions_are_nearest_then_most_frequent(fuzzy: FuzzyRetriever) -> None:
    assert fuzzy._tantivy is not None
    expanded = fuzzy._tantivy.expansions("authentication")
    assert expanded[0] == ("authentication", 0)
    assert ("authentcation", 1) in expanded
    assert fuzzy._tantivy.expansions("zzzzzzzz") == []


@pytest.mark.parametrize("text", ["", "   ", "!!! ...", "the of and", "a b c"])
def test_queries_without_usable_terms_are_empty(fuzzy: FuzzyRetriever, text: str) -> None:
    run = fuzzy.search({"q": text, "ok": "parse_json"}, 5)
    assert run.ids("q") == []
    assert run.ids("ok")[0] == "a"


def test_k_zero_and_unindexed() -> None:
    retriever = FuzzyRetriever()
    assert retriever.search({"q": "parse"}, 5).ids("q") == []  # nothing indexed yet
    retriever.index(Corpus(Path("."), []))
    assert retriever.search({"q": "parse"}, 5).ids("q") == []
    retriever.index(Corpus(Path("."), list(CHUNKS)))
    assert retriever.search({"q": "parse"}, 0).ids("q") == []


def test_include_path() -> None:
    corpus = Corpus(Path("."), list(CHUNKS))
    with_path, without = FuzzyRetriever(), FuzzyRetriever(include_path=False)
    with_path.index(corpus)
    without.index(corpus)
    assert with_path.search({"q": "biling"}, 3).ids("q") == ["c"]  # path: billing.py
    assert without.search({"q": "biling"}, 3).ids("q") == []


def test_ties_broken_by_chunk_id_across_the_k_cut() -> None:
    text = "def handle_request(req):\n    return dispatch(req)"
    ids = [f"t{i:02d}" for i in range(12, 0, -1)]
    corpus = Corpus(Path("."), [_chunk(cid, "app/server.py", text) for cid in ids])
    retriever = FuzzyRetriever()
    retriever.index(corpus)
    run = retriever.search({"q": "handle_reqeust"}, 3)
    assert run.ids("q") == ["t01", "t02", "t03"]
    assert len(set(run.scores["q"].values())) == 1


def test_deterministic_across_builds_and_batches(fuzzy: FuzzyRetriever) -> None:
    queries = {f"q{i}": q for i, q in enumerate(["pasre_json", "authentcation", "parse yaml"])}
    other = FuzzyRetriever()
    other.index(Corpus(Path("."), list(reversed(CHUNKS))))
    one = fuzzy.search(queries, 4)
    assert one.scores == other.search(queries, 4).scores
    singles = {qid: fuzzy.search({qid: q}, 4).scores[qid] for qid, q in queries.items()}
    assert one.scores == singles
    assert one.name == "fuzzy"


def test_scores_decrease_with_typos(fuzzy: FuzzyRetriever) -> None:
    run = fuzzy.search({"exact": "parse_json", "one": "pasre_json", "two": "pasre_jsno"}, 1)
    scores = [run.scores[q].get("a", 0.0) for q in ("exact", "one", "two")]
    assert scores[0] > scores[1] > scores[2] > 0


def test_registry_and_config() -> None:
    retriever = registry.get("retrievers", "fuzzy")(typo_budget=[4, 8], name="fz")
    assert isinstance(retriever, FuzzyRetriever)
    assert retriever.name == "fz"
    cfg = retriever.config()
    assert cfg["backend"] == "tantivy"
    assert cfg["typo_budget"] == {"one_typo": 4, "two_typos": 8}
    made = registry.RETRIEVERS.create("fuzzy", {"typo_budget": {"oneTypo": 4, "twoTypos": 8}})
    assert isinstance(made, FuzzyRetriever) and made.config() == cfg
    assert made.params.typo_budget == TypoBudget(4, 8)  # read once, by TypoBudget.of
    with pytest.raises(ConfigError, match="unknown parameter 'typos'"):
        FuzzyRetriever(typos=[4, 8])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"backend": "elastic"}, "backend 'elastic'"),
        ({"backend": "meilisearch"}, "needs url"),
        ({"backend": "tantivy", "url": "http://x:7700"}, "only used by backend 'meilisearch'"),
        ({"fuzzy_weight": 0.0}, "fuzzy_weight"),
        ({"max_expansions": 0}, "max_expansions"),
    ],
)
def test_bad_params(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FuzzyRetriever(**params)  # type: ignore[arg-type]


def test_url_selects_meilisearch_backend() -> None:
    retriever = FuzzyRetriever(url="http://127.0.0.1:7700")  # no request is sent yet
    assert retriever.backend == "meilisearch"
    assert retriever.config()["url"] == "http://127.0.0.1:7700"


def test_real_code_typos() -> None:
    """Our own package in 30-line windows: typo'd identifiers still land on their file."""
    root = Path(retrieval_bench.__file__).parent
    corpus = window_corpus(root, 30)
    retriever = FuzzyRetriever()
    retriever.index(corpus)
    queries = {
        "tok": "CodeTokneizer split identifier",  # transposition
        "rrf": "reciprocal rank fuson",  # deletion
        "bm25": "get_scores_from_dis",  # 17 chars: deletion of 'i'
    }
    run = retriever.search(queries, 10)
    paths = {qid: {corpus.path_of(cid) for cid in run.ids(qid)} for qid in queries}
    assert "retrieval/code_tokens.py" in paths["tok"]
    assert "rank_fusion/rrf.py" in paths["rrf"]
    assert "retrieval/bm25.py" in paths["bm25"]

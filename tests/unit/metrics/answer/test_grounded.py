"""``grounded_refs`` over the real fixture repository ``fixtures/repos/shopapi``.

Facts used (read from the fixture): src/shopapi/auth/tokens.py has 112 lines and
defines ``verify_access_token`` (line 67), ``hash_password`` and ``TokenError``;
src/shopapi/services/pricing.py has 469 lines and defines ``PricingEngine`` with
``apply_coupon``; three files are named ``__init__.py``; ``questions.jsonl`` is on
disk but listed in ``.rbenchignore``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.answer_metric import Sample, Score
from retrieval_bench.errors import ConfigError
from retrieval_bench.files import SourceFile
from retrieval_bench.metrics.answer import grounded
from retrieval_bench.metrics.answer.grounded import GroundedReferences, file_facts

SHOPAPI = Path(__file__).resolve().parents[4] / "fixtures" / "repos" / "shopapi"
TOKENS = "src/shopapi/auth/tokens.py"
PRICING = "src/shopapi/services/pricing.py"


@pytest.fixture(scope="module")
def metric() -> GroundedReferences:
    return GroundedReferences(root=SHOPAPI)


def score(metric: GroundedReferences, answer: str, **meta: object) -> Score:
    return metric.score(Sample(answer, meta=meta))


def test_fixture_facts_hold() -> None:
    assert len((SHOPAPI / TOKENS).read_text().splitlines()) == 112
    assert len((SHOPAPI / PRICING).read_text().splitlines()) == 469
    assert (SHOPAPI / "questions.jsonl").is_file()
    assert "questions.jsonl" in (SHOPAPI / ".rbenchignore").read_text()


def test_fully_grounded_answer(metric: GroundedReferences) -> None:
    answer = (
        "Tokens are checked by `verify_access_token()` in src/shopapi/auth/tokens.py:67-93, "
        "which raises `TokenError`. Coupons: `PricingEngine.apply_coupon` (pricing.py:293). "
        "The last line of tokens.py is line 112 (tokens.py#L112); see also the Makefile."
    )
    s = score(metric, answer)
    assert s.value == 1.0
    assert s.reason == "6/6 references grounded"
    assert dict(s.details) == {
        "n_refs": 6,
        "n_grounded": 6,
        # tokens.py:67-93, pricing.py:293, tokens.py (bare), tokens.py#L112, Makefile
        "n_paths": 5,
        "n_paths_found": 5,
        "n_paths_ambiguous": 0,
        "n_ranges": 3,
        "n_ranges_valid": 3,
        "n_symbols": 3,
        "n_symbols_found": 3,
    }


def test_wrong_path(metric: GroundedReferences) -> None:
    s = score(metric, "Sessions live in src/shopapi/auth/sessions.py and tokens.py.")
    assert s.value == 0.5
    assert s.details["n_paths"] == 2 and s.details["n_paths_found"] == 1
    assert "src/shopapi/auth/sessions.py (no such file in the repository)" in (s.reason or "")


def test_wrong_folder_is_not_found(metric: GroundedReferences) -> None:
    assert score(metric, "see lib/auth/tokens.py").value == 0.0


def test_ignored_file_does_not_count(metric: GroundedReferences) -> None:
    s = score(metric, "The questions are in questions.jsonl.")
    assert s.value == 0.0 and s.details["n_paths_found"] == 0


@pytest.mark.parametrize(
    ("answer", "valid"),
    [
        ("tokens.py:112", True),
        ("tokens.py:1", True),
        ("tokens.py:113", False),
        ("tokens.py:100-120", False),
        ("lines 57-42 of tokens.py", False),  # reversed
        ("tokens.py:0", False),
        ("pricing.py:240-250", True),
        ("pricing.py:460-470", False),
    ],
)
def test_line_ranges(metric: GroundedReferences, answer: str, valid: bool) -> None:
    s = score(metric, answer)
    assert s.details["n_ranges"] == 1 and s.details["n_paths_found"] == 1
    assert s.details["n_ranges_valid"] == (1 if valid else 0)
    assert s.value == (1.0 if valid else 0.0)


def test_out_of_range_reason_gives_the_line_count(metric: GroundedReferences) -> None:
    s = score(metric, "see tokens.py:100-120")
    assert s.reason == (
        "0/1 references grounded; ungrounded: tokens.py:100-120 "
        f"(line 120 is past the end ({TOKENS} has 112 lines))"
    )


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("`verify_access_token`", True),
        ("`TokenError`", True),
        ("`PricingEngine.apply_coupon`", True),
        ("`shopapi.auth.tokens`", True),  # a module path
        ("`shopapi.auth.tokens.verify_access_token`", True),
        ("`ROUTE_MODULES`", True),  # an annotated assignment
        ("`verify_token()`", False),  # invented
        ("`TokenStore.get`", False),  # invented class
        ("`PricingEngine.hash_password`", False),  # real method name, wrong class
        ("`hash_password` in tokens.py", True),
        ("`hash_password` in pricing.py", False),  # exists, but not in the cited file
    ],
)
def test_symbols(metric: GroundedReferences, answer: str, found: bool) -> None:
    s = score(metric, answer)
    assert s.details["n_symbols"] == 1
    assert s.details["n_symbols_found"] == (1 if found else 0)
    assert s.value == (1.0 if found else 0.0)


def test_mixed_answer_value_and_reason(metric: GroundedReferences) -> None:
    answer = (
        "`verify_access_token()` in tokens.py checks tokens; `TokenStore.get` caches them "
        "(src/shopapi/auth/sessions.py); the header parsing is at http.py:200."
    )
    s = score(metric, answer)
    assert s.value == pytest.approx(1 / 4)
    assert s.reason == (
        "1/4 references grounded; ungrounded: `TokenStore.get` (`TokenStore.get` not found "
        "in the repository); src/shopapi/auth/sessions.py (no such file in the repository); "
        "http.py:200 (line 200 is past the end (src/shopapi/http.py has 115 lines))"
    )


def test_reason_lists_only_the_first_few() -> None:
    m = GroundedReferences(root=SHOPAPI, max_reasons=2)
    s = m.score(Sample("a1.py a2.py a3.py a4.py"))
    assert s.value == 0.0
    assert s.reason is not None and s.reason.endswith("; and 2 more")
    assert "a3.py" not in s.reason


def test_ambiguous_path_counts_as_found(metric: GroundedReferences) -> None:
    s = score(metric, "Each package has an `__init__.py`; see __init__.py:90.")
    # routes/__init__.py has 99 lines, db/__init__.py 60, shopapi/__init__.py 12
    assert s.value == 1.0
    assert s.details["n_paths_ambiguous"] == 2
    assert score(metric, "__init__.py:100").value == 0.0


def test_cited_precision_and_recall(metric: GroundedReferences) -> None:
    answer = (
        "See src/shopapi/auth/tokens.py, tokens.py:67 (same file), pricing.py, "
        "src/shopapi/auth/sessions.py and README.md."
    )
    gold = [TOKENS, "./" + PRICING, "Makefile"]
    s = score(metric, answer, gold_files=gold)
    # citations: tokens (hit), pricing (hit), sessions (miss), README (miss) -> 2/4
    assert s.details["cited_precision"] == 0.5
    # gold covered: tokens, pricing of 3
    assert s.details["cited_recall"] == pytest.approx(2 / 3)
    assert s.value == pytest.approx(4 / 5)


def test_citation_scores_without_any_path(metric: GroundedReferences) -> None:
    s = score(metric, "`TokenError` is raised", gold_files=[TOKENS])
    assert s.details["cited_precision"] is None and s.details["cited_recall"] == 0.0
    assert "cited_recall" not in score(metric, "`TokenError` is raised").details


def test_gold_files_must_be_a_list(metric: GroundedReferences) -> None:
    s = metric.score_samples([Sample("tokens.py", meta={"gold_files": TOKENS})])[0]
    assert s.value is None and "gold_files" in (s.error or "")


@pytest.mark.parametrize("answer", ["The answer is 42.", "", "   \n"])
def test_no_references(metric: GroundedReferences, answer: str) -> None:
    s = score(metric, answer)
    assert s.value == 1.0 and s.reason == "nothing to check: no code references"
    assert s.details["n_refs"] == 0
    strict = GroundedReferences(root=SHOPAPI, require_refs=True).score(Sample(answer))
    assert strict.value is None
    assert strict.error == "grounded_refs: no code references in the answer"


def test_missing_repository(tmp_path: Path) -> None:
    gone = tmp_path / "no-such-repo"
    s = GroundedReferences().score(Sample("tokens.py", meta={"repo": str(gone)}))
    assert s.value is None
    assert s.error == (
        f"grounded_refs: repository folder {str(gone)!r} does not exist or is not a folder"
    )
    s = GroundedReferences().score(Sample("tokens.py"))
    assert s.value is None and "set sample.meta['repo'] or pass root=" in (s.error or "")
    s = GroundedReferences().score(Sample("tokens.py", meta={"repo": 42}))
    assert s.value is None and "meta['repo'] must be a folder path" in (s.error or "")
    with pytest.raises(ConfigError, match="is not a folder"):
        GroundedReferences(root=gone)


def test_meta_repo_overrides_root(tmp_path: Path) -> None:
    (tmp_path / "only.py").write_text("def only():\n    pass\n")
    m = GroundedReferences(root=SHOPAPI)
    assert m.score(Sample("only.py:2 `only`", meta={"repo": str(tmp_path)})).value == 1.0
    assert m.score(Sample("only.py:2 `only`")).value == 0.0


def test_batch_walks_the_repository_once(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[Path] = []
    real = grounded.iter_source_files

    def counting(root: Path, **kwargs: Any) -> Iterator[SourceFile]:
        walks.append(root)
        return real(root, **kwargs)

    monkeypatch.setattr(grounded, "iter_source_files", counting)
    m = GroundedReferences()
    samples = [Sample(f"see tokens.py:{i + 13}", meta={"repo": str(SHOPAPI)}) for i in range(100)]
    scores = m.score_samples(samples)  # lines 13..112: all inside the 112-line file
    assert len(walks) == 1 and m.repo_walks == 1
    assert [s.value for s in scores] == [1.0] * 100
    more = [Sample(f"tokens.py:{n}", meta={"repo": str(SHOPAPI)}) for n in (112, 113, 119)]
    assert [s.value for s in m.score_samples(more)] == [1.0, 0.0, 0.0]
    assert len(walks) == 1


def test_cache_is_lru_per_root(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    m = GroundedReferences(cache_size=1)
    for repo in (SHOPAPI, tmp_path, tmp_path, SHOPAPI):
        m.score(Sample("a.py", meta={"repo": str(repo)}))
    assert m.repo_walks == 3


def test_small_repository_edge_cases(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "blob.json").write_bytes(b"\x00\x01binary")
    (tmp_path / "nonl.go").write_text("package store\n\nfunc (s *Store) Get(k string) {}")
    (tmp_path / "app.js").write_text("export const makeApp = () => {};\nclass Server {}\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("def gone():\n    pass\n")
    m = GroundedReferences(root=tmp_path)

    def value(answer: str) -> float | None:
        return m.score(Sample(answer)).value

    assert value("empty.py") == 1.0  # exists though the chunker skips it
    assert value("empty.py:1") == 0.0  # but has no lines
    assert value("blob.json") == 1.0 and value("blob.json:1") == 0.0
    assert value("nonl.go:3") == 1.0 and value("nonl.go:4") == 0.0
    assert value("`Store.Get` in nonl.go") == 1.0
    assert value("`makeApp()` and `class Server`") == 1.0
    assert value("build/out.py") == 0.0 and value("`gone()`") == 0.0  # ignored folder


def test_definition_rule() -> None:
    facts = file_facts("def f(x):\n    y = g(x)\n    return z == w\nclass K: pass\nlet v = 1")
    assert {"f", "y", "g", "K", "v"} <= facts.defined
    assert "z" not in facts.defined and "w" not in facts.defined
    assert facts.line_count == 5


def test_registered_and_batch_safe() -> None:
    metric = registry.create("metrics", "grounded_refs", root=str(SHOPAPI))
    assert isinstance(metric, GroundedReferences)
    scores = metric.evaluate_batch(["tokens.py:3", "nothing here"], [None, None])
    assert [s.value for s in scores] == [1.0, 1.0]

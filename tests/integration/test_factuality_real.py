"""Claim-based factuality against the real local model server (llama.cpp + SmolLM2-135M).

Three shopapi fixture questions: the reference answer is a0; the answer a is
a paraphrase (001, 005) or a wrong answer (003); the sources are two gold
spans of the question's gold files. Every factuality metric (docs/metrics.md#factuality) and each of
the three helpers runs once. The 135M model is far too weak to judge facts,
so only the contract is asserted: each value lies in [0, 1] or is missing
with an error and the raw model text, nothing failed, and the model was
really called. What it produced is printed (run with ``-s``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.llm.client import LLMClient
from retrieval_bench.llm.factory import make_llm
from retrieval_bench.llm.local_server import ServerState
from retrieval_bench.llm.settings import LLMSpec
from retrieval_bench.metrics.answer.factuality import (
    ClaimExtractor,
    ClaimsFC,
    ContextRelevancy,
    EntailmentAnalyzer,
    Faithfulness,
    Informationless,
    RubricsFC,
)
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHOPAPI = FIXTURES / "shopapi"
ANSWERS = {
    "shopapi-001": "Add a module in src/shopapi/routes/ that defines router = Blueprint(prefix), "
    "decorate its handlers with @router.route, and list the module in ROUTE_MODULES.",
    "shopapi-003": "Bulk orders get a flat 20% discount on the whole cart once it holds more "
    "than 5 items.",  # wrong on purpose
    "shopapi-005": "The database URL comes from SHOPAPI_DATABASE_URL; without it the default "
    "sqlite:///shopapi.sqlite3 is used.",
}
SNIPPET_CHARS = 300
CLAIMS = {"max_claims": 2, "claim_max_tokens": 64}


def _snippet(span: dict[str, object]) -> str:
    lines = (SHOPAPI / str(span["path"])).read_text(encoding="utf-8").splitlines()
    start, end = int(str(span["start_line"])), int(str(span["end_line"]))
    return "\n".join(lines[start - 1 : end])[:SNIPPET_CHARS]


def _samples() -> list[Sample]:
    rows = [json.loads(x) for x in (SHOPAPI / "questions.jsonl").read_text().splitlines() if x]
    out = []
    for row in rows:
        if row["id"] in ANSWERS:
            sources = tuple(_snippet(s) for s in row["gold_spans"][:2])
            out.append(
                Sample(
                    ANSWERS[row["id"]],
                    (row["reference_answer"],),
                    row["query"],
                    sources,
                    id=row["id"],
                )
            )
    assert len(out) == 3
    return out


@pytest.fixture(scope="module")
def llm(llm_server: ServerState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMClient]:
    """One client with an empty response cache for the module: calls really reach the
    model, and the metrics share claim extractions through the cache."""
    root = tmp_path_factory.mktemp("factuality")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(root / "cache"))
        yield make_llm(LLMSpec(base_url=llm_server.base_url), Workspace(root))


def _check(scores: list[Score]) -> None:
    for s in scores:
        if s.value is None:
            assert s.error and isinstance(s.raw, str), s
        else:
            assert 0.0 <= s.value <= 1.0, s
            for key in ("precision", "recall", "f1"):
                v = s.details.get(key)
                assert v is None or 0.0 <= v <= 1.0, s


def _run(metric: MetricBase, llm: LLMClient) -> list[Score]:
    samples = _samples()
    before = llm.stats.snapshot()
    scores = metric.score_samples(samples)
    spent = llm.stats.since(before)
    print(f"\n{metric.name} (SmolLM2-135M): {spent.calls} calls, {spent.cache_hits} cache hits")
    for sample, s in zip(samples, scores, strict=True):
        print(f"  {sample.id}: value={s.value!s:.5} reason={s.reason!r} error={s.error!r}")
        if s.raw:
            print("    raw: " + s.raw.replace("\n", "\n         ")[:600])
    _check(scores)
    assert spent.failures == 0 and spent.calls + spent.cache_hits > 0
    return scores


def test_claims_fc(llm: LLMClient) -> None:
    scores = _run(ClaimsFC(llm=llm, round_above=0.4, **CLAIMS), llm)  # type: ignore[arg-type]
    for s in scores:
        if s.value is not None and "precision" in s.details and s.details["answer_claims"]:
            assert 1 <= (s.details["answer_claims"] or 0) <= 2


def test_rubrics_fc(llm: LLMClient) -> None:
    _run(RubricsFC(llm=llm, max_tokens=16), llm)


def test_faithfulness(llm: LLMClient) -> None:
    # one claim per answer: 3 answers x 2 sources x 2 questions (keeps the file short)
    _run(Faithfulness(llm=llm, max_claims=1, claim_max_tokens=64), llm)


def test_context_relevancy(llm: LLMClient) -> None:
    _run(ContextRelevancy(llm=llm), llm)


def test_helpers(llm: LLMClient) -> None:
    sample = _samples()[2]
    before = llm.stats.snapshot()
    claims = ClaimExtractor(llm, max_claims=2, max_tokens=64).extract(sample.reference)
    print(f"\nclaims of {sample.reference!r}:\n  {claims}")
    assert claims.error is None or isinstance(claims.raw, str)
    assert len(claims.claims) <= 2 and all(c.strip() for c in claims.claims)

    claim = claims.claims[0] if claims.claims else "The default database is SQLite."
    verdict = EntailmentAnalyzer(llm).analyze(sample.prediction, claim)
    print(f"entailment of {claim!r} by the answer: {verdict}")
    assert verdict.error is None
    assert isinstance(verdict.raw_entails, str) and isinstance(verdict.raw_contradicts, str)

    texts = ["Hello! Happy to help - what would you like to know?", sample.prediction]
    found = Informationless(llm).detect_many(texts)
    print(f"informationless: {found}")
    assert all(v.error is None and isinstance(v.raw, str) for v in found)
    spent = llm.stats.since(before)
    assert spent.failures == 0 and spent.calls + spent.cache_hits >= 5

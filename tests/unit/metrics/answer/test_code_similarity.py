"""cosine and cross_similarity (docs/metrics.md#code-suggestion-similarity) with a
bag-of-tokens stand-in embedder.

Three partial-match cases (a suggestion that continues into the next function, a
shorter near-perfect one, a reference padded with logging) are written out below
as Python functions (``SEED_CASES``; the integration test runs the same pairs
through the real all-MiniLM-L6-v2). Matrix cases are hand-computed: for a 2×2
matrix M with singular values σ₁ ≥ σ₂, σ₁σ₂ = |det M| and σ₁² + σ₂² = ‖M‖²_F, so
Σσ = √(‖M‖²_F + 2|det M|) and σ₁ − σ₂ = √(‖M‖²_F − 2|det M|).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.index.embed import normalize_rows
from retrieval_bench.metrics.answer.code_segments import (
    segment_blocks,
    segments,
    statement_language,
)
from retrieval_bench.metrics.answer.code_similarity import (
    CosineSimilarity,
    CrossSimilarity,
    apply_floor,
    cross_similarity,
    spectral_ratio,
)

REFERENCE = """def order_total(lines, coupon, country, customer):
    subtotal = sum(line.unit_price * line.quantity for line in lines)
    if coupon is not None and coupon.is_valid():
        subtotal -= coupon.discount(subtotal)
    if customer.loyalty_tier in LOYALTY_PERCENT:
        subtotal -= subtotal * LOYALTY_PERCENT[customer.loyalty_tier] // 100
    shipping = shipping_cost(country, subtotal)
    vat_rate = VAT_RATES.get(country, DEFAULT_VAT)
    vat = round(subtotal * vat_rate)
    total = subtotal + shipping + vat
    customer.lifetime_spend += total
    return Quote(subtotal=subtotal, shipping=shipping, vat=vat, total=total)"""

# Seed case 1: the suggestion completes the function, then starts others.
CONTINUES = (
    REFERENCE
    + """


def shipping_cost(country, amount):
    zone = ZONES.get(country, "world")
    if amount >= FREE_SHIPPING[zone]:
        return 0
    return FLAT_RATE[zone]


def format_quote(quote):
    parts = [f"{name}: {value / 100:.2f}" for name, value in vars(quote).items()]
    return ", ".join(parts)"""
)

# Seed case 2: shorter (the first half), every line of it right.
SHORTER = "\n".join(REFERENCE.splitlines()[:6])

# Seed case 3: the developer's code is longer only by logging, prints and comments.
PADDED = """def order_total(lines, coupon, country, customer):
    # Work out the price of every line first: unit price times quantity.
    subtotal = sum(line.unit_price * line.quantity for line in lines)
    logger.debug("order subtotal before coupon is %s cents", subtotal)
    # A coupon only applies while it is still valid.
    if coupon is not None and coupon.is_valid():
        subtotal -= coupon.discount(subtotal)
        logger.info("coupon %s applied, subtotal now %s", coupon.code, subtotal)
    # Loyal customers get a percentage off what remains.
    if customer.loyalty_tier in LOYALTY_PERCENT:
        subtotal -= subtotal * LOYALTY_PERCENT[customer.loyalty_tier] // 100
        logger.info("loyalty tier %s applied", customer.loyalty_tier)
    # Shipping depends on the destination and on the discounted amount.
    shipping = shipping_cost(country, subtotal)
    logger.debug("shipping to %s costs %s", country, shipping)
    vat_rate = VAT_RATES.get(country, DEFAULT_VAT)
    vat = round(subtotal * vat_rate)
    # Keep an audit trail of the tax we charged.
    logger.debug("vat rate %s gives vat %s", vat_rate, vat)
    total = subtotal + shipping + vat
    print("total computed:", total)
    # Lifetime spend decides next year's loyalty tier.
    customer.lifetime_spend += total
    logger.debug("lifetime spend of %s is now %s", customer.id, customer.lifetime_spend)
    return Quote(subtotal=subtotal, shipping=shipping, vat=vat, total=total)"""

UNRELATED = """def send_welcome_email(user, mailer):
    message = EmailMessage()
    message["To"] = user.email
    message["Subject"] = "Welcome aboard"
    message.set_content(render_template("welcome.txt", name=user.full_name))
    with mailer.connect() as smtp:
        smtp.send_message(message)
    return message["Message-ID"]"""

SEED_CASES: dict[str, tuple[str, str]] = {
    "continues_into_next_function": (CONTINUES, REFERENCE),
    "shorter_near_perfect": (SHORTER, REFERENCE),
    "reference_padded_with_logging": (REFERENCE, PADDED),
}
"""(prediction, reference) for the three partial-matching cases."""

_TOKEN = re.compile(r"[A-Za-z]+|\d+")


class BagOfTokens:
    """Stand-in embedder: each lower-cased word or number hashed into one of ``dim``
    buckets, rows L2-normalised. Records every call, so batching is observable."""

    name = "fake-bag-of-tokens"

    def __init__(self, dim: int = 1024) -> None:
        self._dim = dim
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                out[row, int(hashlib.sha256(token.encode()).hexdigest(), 16) % self._dim] += 1
        return normalize_rows(out)


class Lookup:
    """Stand-in embedder with hand-chosen vectors per text (unknown text: KeyError)."""

    name = "fake-lookup"

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self.dim = len(next(iter(self.vectors.values())))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def cosine(embedder: object | None = None) -> CosineSimilarity:
    return CosineSimilarity(embedder=embedder or BagOfTokens())  # type: ignore[arg-type]


def cross(embedder: object | None = None, **options: object) -> CrossSimilarity:
    return CrossSimilarity(embedder=embedder or BagOfTokens(), **options)  # type: ignore[arg-type]


# -- the three partial-match cases -------------------------------------------------------
@pytest.mark.parametrize("case", list(SEED_CASES))
@pytest.mark.parametrize("by", ["lines", "statements"])
def test_seed_cases_cosine_drops_and_cross_similarity_does_not(case: str, by: str) -> None:
    prediction, reference = SEED_CASES[case]
    cos = cosine().evaluate(prediction, reference).value
    score = cross(by=by, language="python").evaluate(prediction, reference)
    assert cos is not None and score.value is not None
    assert cos < 0.93  # the whole-block embedding blurs the shared part
    assert score.value >= 0.9, score.reason
    assert score.value > cos + 0.04


def test_the_seed_cases_measured_values_under_the_stand_in() -> None:
    """The numbers behind the test above (bag-of-tokens embedder, lines, floor 0.5)."""
    values = {
        case: (cosine().evaluate(p, r).value, cross().evaluate(p, r).value)
        for case, (p, r) in SEED_CASES.items()
    }
    assert values["continues_into_next_function"] == pytest.approx((0.920, 1.0), abs=1e-3)
    assert values["shorter_near_perfect"] == pytest.approx((0.763, 0.925), abs=1e-3)
    assert values["reference_padded_with_logging"] == pytest.approx((0.857, 0.917), abs=1e-3)


def test_unrelated_code_scores_zero_with_the_floor_but_not_with_the_raw_formula() -> None:
    assert cross().evaluate(UNRELATED, REFERENCE).value == 0.0
    raw = cross(floor=None).evaluate(UNRELATED, REFERENCE)
    assert raw.value is not None and raw.value > 0.5  # why the floor exists
    cos = cosine().evaluate(UNRELATED, REFERENCE).value
    assert cos is not None and cos < 0.1


# -- identical, symmetric, order ----------------------------------------------------------
@pytest.mark.parametrize("metric", [cosine(), cross(), cross(by="statements", language="py")])
def test_identical_blocks_score_exactly_one(metric: CosineSimilarity) -> None:
    assert metric.evaluate(REFERENCE, REFERENCE).value == 1.0
    assert metric.evaluate("", "  \n").value == 1.0  # two blank blocks are identical


def test_cross_similarity_identical_matrices_give_one_without_the_shortcut() -> None:
    vectors = normalize_rows(np.random.default_rng(0).normal(size=(6, 16)))
    for floor in (None, 0.0, 0.5):
        assert cross_similarity(vectors, vectors, floor=floor).value == 1.0


def test_cosine_is_symmetric_and_cross_similarity_is_not() -> None:
    assert cosine().evaluate(SHORTER, REFERENCE).value == pytest.approx(
        cosine().evaluate(REFERENCE, SHORTER).value, abs=1e-6
    )
    forward = cross(clip=False).evaluate(SHORTER, REFERENCE).value
    backward = cross(clip=False).evaluate(REFERENCE, SHORTER).value
    assert forward is not None and backward is not None
    assert abs(forward - backward) > 0.05  # normalised by the reference's own spectrum


def test_cross_similarity_ignores_segment_order() -> None:
    """Permuting rows of CSM leaves its singular values alone: a known blind spot."""
    shuffled = "\n".join(reversed(REFERENCE.splitlines()))
    assert cross().evaluate(shuffled, REFERENCE).value == pytest.approx(1.0, abs=1e-9)


# -- hand-checked matrices ----------------------------------------------------------------
def test_spectral_ratio_by_hand() -> None:
    assert spectral_ratio(np.eye(3)) == pytest.approx(1 / 3)
    assert spectral_ratio(np.diag([3.0, 1.0])) == pytest.approx(0.75)
    assert spectral_ratio(np.ones((3, 4))) == pytest.approx(1.0)  # rank one
    assert spectral_ratio(np.zeros((2, 3))) is None
    assert spectral_ratio(np.zeros((0, 3))) is None


def test_orthogonal_unit_vectors_two_of_three_matched() -> None:
    """P = (e1, e2), R = (e1, e2, e3): CSM = [I2 0], σ = (1, 1), r = 1/2; R Rᵀ = I3,
    r' = 1/3; score = (1/2)/(2/3) = 3/4 — the (1 − 1/k)/(1 − 1/n) of a k-of-n prefix."""
    eye = np.eye(3)
    result = cross_similarity(eye[:2], eye, floor=None)
    assert (result.r, result.r_reference) == pytest.approx((1 / 2, 1 / 3))
    assert result.value == pytest.approx(0.75)
    assert result.case == "formula"
    assert cross_similarity(eye[:2], eye).value == pytest.approx(0.75)  # floor keeps 0 and 1


def test_extra_orthogonal_segments_leave_the_score_at_one() -> None:
    eye = np.eye(5)
    assert cross_similarity(eye, eye[:3], floor=None).value == pytest.approx(1.0)


def test_two_by_two_with_known_singular_values() -> None:
    """P = ((1, 0), (0.6, 0.8)), R = I2 so CSM = P: ‖P‖²_F = 2, det = 0.8, Σσ = √3.6,
    σ₁ − σ₂ = √0.4, r = (1 + 1/3)/2 = 2/3; r' = 1/2; score = (1/3)/(1/2) = 2/3."""
    p = np.array([[1.0, 0.0], [0.6, 0.8]])
    sigma = np.linalg.svd(p, compute_uv=False)
    half_sum, half_gap = math.sqrt(3.6) / 2, math.sqrt(0.4) / 2
    assert sigma == pytest.approx([half_sum + half_gap, half_sum - half_gap])
    result = cross_similarity(p, np.eye(2), floor=None)
    assert result.r == pytest.approx(2 / 3)
    assert result.value == pytest.approx(2 / 3)
    # Floor 0.5 maps CSM to ((1, 0), (0.2, 0.6)): ‖·‖²_F = 1.4, det = 0.6,
    # r = (1 + √(0.2/2.6))/2, score = 1 − √(1/13).
    floored = apply_floor(p @ np.eye(2), 0.5)
    assert floored == pytest.approx(np.array([[1.0, 0.0], [0.2, 0.6]]))
    assert cross_similarity(p, np.eye(2), floor=0.5).value == pytest.approx(1 - math.sqrt(1 / 13))


def test_self_ratio_is_largest_eigenvalue_over_trace() -> None:
    """For CSM' = R Rᵀ (symmetric PSD, unit diagonal): σ = eigenvalues, Σσ = n."""
    r = normalize_rows(np.random.default_rng(1).normal(size=(7, 5))).astype(np.float64)
    gram = r @ r.T
    assert spectral_ratio(gram) == pytest.approx(np.linalg.eigvalsh(gram)[-1] / 7)


# -- degenerate cases ----------------------------------------------------------------------
def test_one_reference_segment_falls_back_to_the_best_match() -> None:
    p = np.array([[1.0, 0.0], [0.8, 0.6]])
    result = cross_similarity(p, np.array([[0.8, 0.6]]), floor=None)
    assert result.case == "best_match" and result.value == pytest.approx(1.0)
    result = cross_similarity(p[:1], np.array([[0.8, 0.6]]), floor=0.5)
    assert result.value == pytest.approx((0.8 - 0.5) / 0.5)


def test_one_prediction_segment_falls_back_to_the_best_match() -> None:
    result = cross_similarity(np.array([[0.6, 0.8]]), np.eye(2), floor=None)
    assert result.case == "best_match" and result.value == pytest.approx(0.8)


def test_repeated_segments_count_as_one() -> None:
    same = np.array([[1.0, 0.0]] * 3)
    result = cross_similarity(np.eye(2), same, floor=None)
    assert result.case == "best_match" and result.value == pytest.approx(1.0)


def test_negative_best_match_is_clipped_to_zero_unless_clip_is_off() -> None:
    p, ref = np.array([[-1.0, 0.0]]), np.array([[1.0, 0.0]])
    assert cross_similarity(p, ref, floor=None).value == 0.0
    assert cross_similarity(p, ref, floor=None, clip=False).value == pytest.approx(-1.0)


def test_zero_matrices_score_zero() -> None:
    eye = np.eye(4)
    assert cross_similarity(eye[:2], eye[2:], floor=None).case == "zero_matrix"
    assert cross_similarity(eye[:2], eye[2:], floor=None).value == 0.0
    assert cross_similarity(eye[:2], np.zeros((3, 4))).value == 0.0  # zero vectors


def test_scores_above_one_are_clipped_and_kept_in_details() -> None:
    """A reference of near-duplicate segments has a large σ'₀, so a prediction with
    distinct matches beats it: (1 − 1/2)/(1 − r') > 1."""
    ref = normalize_rows(np.array([[1.0, 0.0], [0.95, 0.31], [0.0, 1.0]]))
    result = cross_similarity(np.eye(2), ref, floor=None, clip=False)
    assert result.value > 1.0
    clipped = cross_similarity(np.eye(2), ref, floor=None)
    assert clipped.value == 1.0 and clipped.unclipped == pytest.approx(result.value)
    metric = cross(
        Lookup({"a": [1, 0], "b": [0, 1], "x": ref[0], "y": ref[1], "z": ref[2]}), floor=None
    )
    score = metric.evaluate("a\nb", "x\ny\nz")
    assert score.value == 1.0 and score.details["unclipped"] == pytest.approx(result.value)


def test_bad_matrices_raise() -> None:
    with pytest.raises(ValueError, match="equal width"):
        cross_similarity(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        cross_similarity(np.array([[np.nan, 1.0]]), np.eye(2))


# -- the metrics' rules ------------------------------------------------------------------
def test_blank_blocks() -> None:
    for metric in (cosine(), cross()):
        assert metric.evaluate("", REFERENCE).value == 0.0
        assert metric.evaluate(REFERENCE, "\n \n").value == 0.0


def test_no_reference_is_an_error_and_a_missing_value_in_a_batch() -> None:
    with pytest.raises(ValueError, match="no reference"):
        cross().evaluate(REFERENCE, None)
    scores = cosine().score_samples([Sample(REFERENCE), Sample(REFERENCE, (REFERENCE,))])
    assert scores[0].value is None and "no reference" in (scores[0].error or "")
    assert scores[1].value == 1.0


def test_bad_sample_is_missing_and_the_batch_goes_on() -> None:
    bad = Sample(prediction=3, references=(REFERENCE,))  # type: ignore[arg-type]
    scores = cross().score_samples([bad, Sample(SHORTER, (REFERENCE,))])
    assert scores[0].value is None and "prediction must be a string" in (scores[0].error or "")
    assert scores[1].value == pytest.approx(0.925, abs=1e-3)


def test_several_references_take_the_best() -> None:
    score = cross().evaluate(REFERENCE, [UNRELATED, PADDED, REFERENCE])
    assert score.value == 1.0 and score.details["reference_index"] == 2.0
    score = cosine().evaluate(REFERENCE, [UNRELATED, PADDED])
    assert score.details["reference_index"] == 1.0


def test_details_explain_the_score() -> None:
    score = cross(by="statements", language="python").evaluate(REFERENCE, PADDED)
    assert score.details["prediction_units"] == 12.0
    assert score.details["reference_units"] == 19.0  # comments are not statements
    assert score.details["best_match"] == 0.0
    r, r_ref = score.details["r"], score.details["r_reference"]
    assert r is not None and r_ref is not None
    assert score.value == pytest.approx((1 - r) / (1 - r_ref))
    assert score.reason is not None and "statements (python)" in score.reason
    lines = cross().evaluate(REFERENCE, PADDED)
    assert lines.details["reference_units"] == 25.0  # every non-blank line


def test_sample_language_overrides_and_unknown_language_uses_lines() -> None:
    metric = cross(by="statements")  # no language: lines
    sample = Sample(REFERENCE, (PADDED,), meta={"language": "python"})
    assert metric.score_samples([sample])[0].details["reference_units"] == 19.0
    assert metric.evaluate(REFERENCE, PADDED).details["reference_units"] == 25.0
    ruby = cross(by="statements", language="ruby").evaluate(REFERENCE, PADDED)
    assert ruby.reason is not None and "by lines" in ruby.reason


# -- batching -----------------------------------------------------------------------------
def test_a_batch_is_one_embedder_call_with_distinct_segments() -> None:
    embedder = BagOfTokens()
    metric = cross(embedder)
    samples = [Sample(p, (r,)) for p, r in SEED_CASES.values()] + [Sample(UNRELATED, (REFERENCE,))]
    batch = metric.score_samples(samples)
    assert len(embedder.calls) == 1
    sent = embedder.calls[0]
    assert len(sent) == len(set(sent))
    expected = {
        s.strip()
        for p, r in (*SEED_CASES.values(), (UNRELATED, REFERENCE))
        for s in (p + "\n" + r).splitlines()
        if s.strip()
    }
    assert set(sent) == expected
    one_by_one = [cross().score(s) for s in samples]
    assert [s.value for s in batch] == pytest.approx([s.value for s in one_by_one])


def test_cosine_batch_embeds_each_block_once() -> None:
    embedder = BagOfTokens()
    cosine(embedder).score_samples([Sample(SHORTER, (REFERENCE,)), Sample(PADDED, (REFERENCE,))])
    assert len(embedder.calls) == 1 and sorted(embedder.calls[0]) == sorted(
        [SHORTER, REFERENCE, PADDED]
    )


def test_a_failing_embedder_makes_every_sample_missing() -> None:
    class Broken:
        name = "broken"
        dim = 2

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((1, 2))

    scores = cross(Broken()).score_samples([Sample(SHORTER, (REFERENCE,))] * 2)
    assert all(s.value is None and "one row per text" in (s.error or "") for s in scores)


# -- construction -------------------------------------------------------------------------
def test_bad_options_name_themselves() -> None:
    with pytest.raises(ValueError, match="by='words'"):
        CrossSimilarity(by="words")
    with pytest.raises(ValueError, match="floor"):
        CrossSimilarity(floor=1.0)
    with pytest.raises(TypeError, match="embed"):
        CosineSimilarity(embedder=object())  # type: ignore[arg-type]


def test_registered_and_lazy() -> None:
    assert registry.get("metrics", "cosine") is CosineSimilarity
    assert registry.get("metrics", "cross_similarity") is CrossSimilarity
    metric = registry.create("metrics", "cross_similarity", by="statements", language="go")
    assert metric.by == "statements" and metric._embedder is None  # no model loaded yet


# -- segmentation ----------------------------------------------------------------------------
PYTHON = '''@app.route("/total")
def total(items):  # the header keeps its decorator
    """Sum the
    items."""
    # a comment is not a statement
    result = compute(items,   # neither is this one
                     strict=True)
    if result > 0:
        return result
    elif result == 0:
        pass
    else:
        x = 1; y = 2
    return f"{x}\\n{y}"
'''


def test_lines_are_the_stripped_non_blank_lines() -> None:
    assert segments("  a = 1  \n\n\t# note\n  }\n") == ["a = 1", "# note", "}"]
    assert segments("", "statements", "python") == []


def test_python_statements() -> None:
    assert segments(PYTHON, "statements", "python") == [
        '@app.route("/total") def total(items):',
        '"""Sum the items."""',
        "result = compute(items, strict=True)",
        "if result > 0:",
        "return result",
        "elif result == 0:",
        "pass",
        "else:",
        "x = 1",
        "y = 2",
        'return f"{x}\\n{y}"',
    ]


def test_brace_language_statements_drop_braces_and_comments() -> None:
    js = """function add(a, b) {
  const s = a + b; // sum
  if (s > 10) {
    log("big");
  } else {
    return -s;
  }
  switch (s) { case 1: f(); break; }
}"""
    assert segments(js, "statements", "javascript") == [
        "function add(a, b)",
        "const s = a + b;",
        "if (s > 10)",
        'log("big");',
        "else",
        "return -s;",
        "switch (s)",
        "case 1:",
        "f();",
        "break;",
    ]


def test_a_syntax_error_becomes_lines_of_the_broken_part() -> None:
    truncated = 'def f(x):\n    s = {\n        "a": 1,\n        "b": x,'
    assert segments(truncated, "statements", "python") == [
        "def f(x):",
        "s = {",
        '"a": 1,',
        '"b": x,',
    ]


def test_an_indented_fragment_still_parses() -> None:
    fragment = "    y = x + 1\n    return y\n\ndef g(a):\n    return a * 2"
    assert segments(fragment, "statements", "python") == [
        "y = x + 1",
        "return y",
        "def g(a):",
        "return a * 2",
    ]


@pytest.mark.parametrize(
    ("language", "grammar"),
    [
        ("python", "python"),
        ("py", "python"),
        (".py", "python"),
        ("src/a.go", "go"),
        ("TS", "typescript"),
        ("ruby", None),
        (None, None),
    ],
)
def test_language_names_extensions_and_paths(language: str | None, grammar: str | None) -> None:
    assert statement_language("statements", language) == grammar
    assert statement_language("lines", language) is None


def test_statements_without_a_grammar_are_lines() -> None:
    assert segments("a\n  b = {\n}", "statements", "ruby") == ["a", "b = {", "}"]


def test_segment_input_errors() -> None:
    with pytest.raises(ValueError, match="'lines' or 'statements'"):
        segments("x", "words")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="string"):
        segments(b"x")  # type: ignore[arg-type]


def test_blocks_compared_together_are_split_the_same_way() -> None:
    """A suggestion cut inside a statement has a syntax error: both blocks use lines,
    so a half-written call is not set against the whole statement."""
    whole = (
        'def f(row):\n    return User(\n        id=row["id"],\n        email=row["email"],\n    )'
    )
    cut = "\n".join(whole.splitlines()[:3])
    blocks, how = segment_blocks([cut, whole], "statements", "python")
    assert how == "lines (syntax error)"
    assert blocks == [segments(cut), segments(whole)]
    blocks, how = segment_blocks([whole, whole], "statements", "python")
    assert how == "statements (python)"
    assert blocks[0] == ["def f(row):", 'return User( id=row["id"], email=row["email"], )']
    assert segment_blocks(["a"], "statements", None) == ([["a"]], "lines")
    score = cross(by="statements", language="python").evaluate(cut, whole)
    assert score.reason is not None and "lines (syntax error)" in score.reason

"""Code-suggestion similarity: ``cosine`` and ``cross_similarity``
(docs/metrics.md#code-suggestion-similarity).

``cosine`` embeds the prediction and the reference as whole blocks and reports
their cosine, in [-1, 1], unclipped: the plain "similarity score". Its flaw is
*the partial matching problem*: a block embedding blurs
everything in the block, so the score drops when one block is longer than
the other even if the shared part matches perfectly — a suggestion that
completes the function and then starts another, a shorter near-perfect
suggestion, a reference padded with logging and comments. (Also, MiniLM
reads only the first 256 word pieces of a block, so a long block's tail is
invisible to it.)

``cross_similarity`` is the cure. Split both blocks into segments
(lines or statements, :mod:`retrieval_bench.metrics.answer.code_segments`), embed
each segment (unit vectors: a dot product is a cosine), and build

* the cross similarity matrix ``CSM = P Rᵀ`` (prediction segments × reference
  segments) and its singular values σ₀ ≥ σ₁ ≥ …; ``r = σ₀ / Σσ``;
* the same for the perfect match ``CSM' = R Rᵀ`` (the reference against
  itself); ``r' = σ'₀ / Σσ'``;
* ``score = (1 − r) / (1 − r')``.

Why it works: if every predicted segment matches a distinct reference
segment and nothing else, CSM is (close to) a partial permutation matrix, its
k singular values are equal and ``1 − r = 1 − 1/k``; segments that match
nothing add nothing; a CSM where everything resembles everything is near
rank one and ``r → 1``. So extra code after the match, or padding in the
reference, leaves the score near 1, while ``(1 − 1/k)/(1 − 1/n)`` is what a
perfect k-segment prefix of an n-segment reference earns. Blind spot:
permuting rows or columns leaves singular values alone, so the order of the
segments does not count (the lines of a function reversed score 1.0).

**The noise floor** (``floor``, our addition; numbers from
``benchmarks/studies/code_similarity_study.py``, 98 shopapi functions,
all-MiniLM-L6-v2). ``r`` depends only on the *shape* of the spectrum, not on
how large the similarities are, and real embedders give unrelated lines of
code cosines of 0.1–0.4: a matrix of such small, uneven values has a spread
spectrum. With the raw formula an *unrelated* function scored 0.70 on
average (cosine: 0.25), against 0.84–0.98 for the partial matches. So both
matrices are first mapped through ``c ↦ max(0, (c − floor) / (1 − floor))``:
a similarity at or below the floor is "no match", a similarity of 1 stays 1
(the diagonal of CSM'). With ``floor=0.5`` (the default, chosen for MiniLM on
code; re-run the study for another embedder) unrelated functions score 0.07
and the partial matches 0.89–1.0 (lines). ``floor=None`` is the
raw formula exactly, on raw cosines.

Defined cases (in this order; ``details`` says which applied):

* identical segment lists (also two blank blocks) → 1.0 exactly (the formula
  gives 1 too, up to rounding);
* one block blank (no segments), the other not → 0.0;
* either block with a single distinct segment (or a reference whose
  segments all embed to the same direction, ``1 − r' ≈ 0``): the spectrum has
  one value and ``r`` carries no information (``r' = 1`` would divide by
  zero), so the score is the **best match**: the highest (floored) similarity
  between a segment of one block and a segment of the other. Note the step
  this makes: a one-line suggestion equal to one line of a long reference
  scores 1.0, while a two-line one earns the formula's ≈ 0.5;
* CSM all zero (nothing above the floor, or zero vectors) → 0.0;
* CSM' all zero (reference segments embed to zero vectors) → 0.0.

``score ≥ 0`` always (σ₀ ≤ Σσ), but it exceeds 1 when the prediction's CSM is
more spread than the reference's own (e.g. a reference of near-duplicate
lines, whose large σ'₀ shrinks the denominator). ``clip=True`` (default) caps
the value at 1 — a suggestion should not beat the reference itself — and
keeps the raw value in ``details["unclipped"]``; ``clip=False`` reports it.
With ``floor=None`` the best-match fallback can be negative; ``clip`` also
raises it to 0.

Both metrics: a sample without a reference is a missing value; several
references → the best-scoring one (its index in ``details``); a batch is
embedded in one embedder call, each distinct text once
(:class:`EmbeddingMetric`). The default embedder is the packaged
all-MiniLM-L6-v2, loaded once per process, never downloaded.

Size: a quarter of it is this docstring (the algorithm and its measured noise
floor); splitting the algorithm from the metric classes waits for the planned
reorganisation of ``metrics/``.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import StrictFloat

from retrieval_bench.contracts.answer_metric import MetricBase, Sample, Score
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.index.embed import Embedder, SentenceTransformerEmbedder, normalize_rows
from retrieval_bench.metrics.answer.code_segments import SEGMENT_MODES, SegmentBy, segment_blocks

Vectors = Mapping[str, np.ndarray]

DEFAULT_FLOOR = 0.5
"""Similarities at or below this count as no match (see "The noise floor" above)."""
_EPS = 1e-9


# -- the formula ------------------------------------------------------------------------
def spectral_ratio(matrix: np.ndarray) -> float | None:
    """``σ₀ / Σσ`` of ``matrix``'s singular values; None for an empty or all-zero matrix."""
    if matrix.size == 0:
        return None
    sigma = np.linalg.svd(matrix, compute_uv=False)
    total = float(sigma.sum())
    if total <= _EPS:
        return None
    return float(sigma[0]) / total


def apply_floor(similarities: np.ndarray, floor: float | None) -> np.ndarray:
    """``max(0, (c − floor)/(1 − floor))`` elementwise; the raw matrix when ``floor`` is None."""
    if floor is None:
        return similarities
    return np.maximum(0.0, (similarities - floor) / (1.0 - floor))


@dataclass(frozen=True)
class CrossResult:
    """The outcome of :func:`cross_similarity` on two sets of segment vectors."""

    value: float
    unclipped: float
    r: float | None
    r_reference: float | None
    case: str
    """``formula``, ``best_match`` or ``zero_matrix`` (which rule gave the value)."""


def cross_similarity(
    prediction: np.ndarray,
    reference: np.ndarray,
    *,
    floor: float | None = DEFAULT_FLOOR,
    clip: bool = True,
) -> CrossResult:
    """The cross-similarity score ``(1 − r)/(1 − r')`` for unit-row matrices ``prediction``
    (m×d) and ``reference`` (n×d), m, n ≥ 1, with the degenerate cases of the module
    docstring."""
    p = np.asarray(prediction, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if p.ndim != 2 or ref.ndim != 2 or not len(p) or not len(ref) or p.shape[1] != ref.shape[1]:
        raise ValueError(
            f"cross_similarity needs two non-empty matrices of equal width, got {p.shape} "
            f"and {ref.shape}"
        )
    if not (np.isfinite(p).all() and np.isfinite(ref).all()):
        raise ValueError("cross_similarity: the embedder returned NaN or infinite values")
    csm = apply_floor(p @ ref.T, floor)
    csm_ref = apply_floor(ref @ ref.T, floor)
    r = spectral_ratio(csm)
    r_ref = spectral_ratio(csm_ref)
    if r is None or r_ref is None:
        return CrossResult(0.0, 0.0, r, r_ref, "zero_matrix")
    single = len(np.unique(p, axis=0)) == 1 or len(np.unique(ref, axis=0)) == 1
    if single or 1.0 - r_ref <= _EPS:
        raw = float(csm.max())
        value = min(1.0, max(0.0, raw)) if clip else raw
        return CrossResult(value, raw, r, r_ref, "best_match")
    raw = (1.0 - r) / (1.0 - r_ref)
    return CrossResult(min(raw, 1.0) if clip else raw, raw, r, r_ref, "formula")


# -- batching -----------------------------------------------------------------------------
@functools.cache
def packaged_minilm() -> SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2, one per process (loaded on its first ``embed``)."""
    return SentenceTransformerEmbedder()


@dataclass(frozen=True)
class Units:
    """What one sample's blocks are compared by: the prediction's units, each
    reference's units, and how they were split (for the reason)."""

    prediction: list[str]
    references: list[list[str]]
    how: str


class EmbeddingMetric(MetricBase):
    """A metric that compares embeddings of *units* of the prediction and reference
    (whole blocks for ``cosine``, segments for ``cross_similarity``).

    :meth:`score_samples` splits every block of the batch into units, embeds
    each distinct unit once in a single ``embedder.embed`` call, then compares.
    A sample that cannot be split or compared becomes a missing value. The
    keywords ``embedder`` and ``name`` (default: the class's) are no ``Params``.
    """

    def __init__(
        self,
        params: StageParams | None = None,
        /,
        *,
        embedder: Embedder | None = None,
        name: str | None = None,
        **values: Any,
    ) -> None:
        self.params = self.Params.of(params, **values)
        name = type(self).name if name is None else name
        if embedder is not None and not callable(getattr(embedder, "embed", None)):
            raise TypeError(
                f"{name}: embedder must have an embed(texts) method, got {type(embedder).__name__}"
            )
        self.name = name
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = packaged_minilm()
        return self._embedder

    @abstractmethod
    def units(self, sample: Sample) -> Units:
        """The texts that stand for the prediction and each reference (none for a blank block)."""

    @abstractmethod
    def compare(
        self, prediction: list[str], reference: list[str], vectors: Vectors, how: str
    ) -> Score:
        """Score non-empty, different unit lists; ``vectors`` maps each unit to a unit vector."""

    # -- one sample / a batch ----------------------------------------------------------
    def score(self, sample: Sample) -> Score:
        prepared = self._prepare(sample)
        return self._best(prepared, self._embed_all([prepared]))

    def score_samples(self, samples: Sequence[Sample]) -> list[Score]:
        prepared: list[Units | Exception] = []
        for sample in samples:
            try:
                prepared.append(self._prepare(sample))
            except Exception as exc:  # noqa: BLE001 - a bad sample is a missing value
                prepared.append(exc)
        try:
            vectors = self._embed_all([p for p in prepared if not isinstance(p, Exception)])
        except Exception as exc:  # noqa: BLE001 - no vectors: every sample is missing
            return [Score.missing(f"{self.name}: embedding failed: {exc}") for _ in samples]
        scores: list[Score] = []
        for p in prepared:
            if isinstance(p, Exception):
                scores.append(Score.missing(f"{type(p).__name__}: {p}"))
                continue
            try:
                scores.append(self._best(p, vectors))
            except Exception as exc:  # noqa: BLE001
                scores.append(Score.missing(f"{type(exc).__name__}: {exc}"))
        return scores

    # -- internals ---------------------------------------------------------------------
    def _prepare(self, sample: Sample) -> Units:
        if not isinstance(sample.prediction, str):
            raise TypeError(
                f"{self.name}: prediction must be a string, got {type(sample.prediction).__name__}"
            )
        if isinstance(sample.references, str) or not all(
            isinstance(r, str) for r in sample.references
        ):
            raise TypeError(f"{self.name}: references must be a tuple of strings")
        if not sample.references:
            raise ValueError(f"{self.name}: the sample has no reference; give it the expected code")
        return self.units(sample)

    def _embed_all(self, prepared: Sequence[Units]) -> Vectors:
        """One embedder call for every distinct unit of the batch."""
        distinct: dict[str, None] = {}
        for units in prepared:
            distinct.update(dict.fromkeys(units.prediction))
            for reference in units.references:
                distinct.update(dict.fromkeys(reference))
        texts = list(distinct)
        if not texts:
            return {}
        matrix = np.asarray(self.embedder.embed(texts))
        if matrix.ndim != 2 or len(matrix) != len(texts):
            raise ValueError(
                f"the embedder returned shape {matrix.shape} for {len(texts)} texts; "
                "expected one row per text"
            )
        rows = normalize_rows(matrix).astype(np.float64)
        return dict(zip(texts, rows, strict=True))

    def _best(self, units: Units, vectors: Vectors) -> Score:
        """The best-scoring reference (the first on ties), its index in ``details``."""
        best: Score | None = None
        best_index = 0
        for i, reference in enumerate(units.references):
            score = self._pair(units.prediction, reference, vectors, units.how)
            if best is None or _value(score) > _value(best):
                best, best_index = score, i
        assert best is not None
        details = {**best.details, "reference_index": float(best_index)}
        return Score(best.value, reason=best.reason, details=details)

    def _pair(
        self, prediction: list[str], reference: list[str], vectors: Vectors, how: str
    ) -> Score:
        counts: dict[str, float | None] = {
            "prediction_units": float(len(prediction)),
            "reference_units": float(len(reference)),
        }
        if prediction == reference:
            return Score(1.0, reason="identical", details=counts)
        if not (prediction and reference):
            return Score(0.0, reason="one block is blank", details=counts)
        score = self.compare(prediction, reference, vectors, how)
        return Score(score.value, reason=score.reason, details={**counts, **score.details})


def _value(score: Score) -> float:
    return float("-inf") if score.value is None else score.value


# -- the metrics --------------------------------------------------------------------------
class CosineSimilarity(EmbeddingMetric):
    """Cosine of the whole-block embeddings of prediction and reference, in [-1, 1].

    Identical texts → 1.0 exactly; two blank texts → 1.0; one blank → 0.0.

    No ``Params``. Keywords:
        embedder: anything with ``embed(texts) -> (n, d) array`` (default: the
            packaged all-MiniLM-L6-v2, loaded on first use).
        name: the metric's label in results.
    """

    description = "cosine of whole-block embeddings (the plain similarity score)"
    name = "cosine"

    def units(self, sample: Sample) -> Units:
        def block(code: str) -> list[str]:
            return [code] if code.strip() else []

        return Units(block(sample.prediction), [block(r) for r in sample.references], "blocks")

    def compare(
        self, prediction: list[str], reference: list[str], vectors: Vectors, how: str
    ) -> Score:
        return Score(float(vectors[prediction[0]] @ vectors[reference[0]]))


class CrossSimilarity(EmbeddingMetric):
    """The cross-similarity score over segments (see the module docstring).

    Parameters (``Params``):
        by: ``"lines"`` (default) or ``"statements"`` (tree-sitter; needs a language;
            a sample whose prediction or a reference has a syntax error uses lines
            for all its blocks, so that they line up).
        language: the code's language for ``statements`` (``"python"``, ``"go"``, an
            extension…); a sample's ``meta["language"]`` overrides it. None or
            unknown → lines.
        floor: similarities at or below count as no match (default 0.5); None =
            the raw formula on raw cosines.
        clip: cap the score at 1.0 (default True; the raw value stays in details).

    Keywords: ``embedder`` (as for ``cosine``) and ``name`` (the label in results).

    ``details``: ``prediction_units``/``reference_units`` (segment counts),
    ``r``, ``r_reference``, ``unclipped``, ``best_match`` (1.0 when the
    one-segment fallback gave the value) and ``reference_index``.
    """

    description = "cross-similarity of segment embeddings (singular values)"
    name = "cross_similarity"

    class Params(StageParams):
        by: str = "lines"
        language: str | None = None
        floor: StrictFloat | None = DEFAULT_FLOOR
        clip: bool = True

    params: CrossSimilarity.Params

    def __init__(
        self,
        params: CrossSimilarity.Params | None = None,
        /,
        *,
        embedder: Embedder | None = None,
        name: str = "cross_similarity",
        **values: Any,
    ) -> None:
        p = self.Params.of(params, **values)
        by, floor = p.by, p.floor
        if by not in SEGMENT_MODES:
            raise ValueError(f"{name}: unknown by={by!r}; choose 'lines' or 'statements'")
        if floor is not None and not 0.0 <= floor < 1.0:
            raise ValueError(f"{name}: floor must be a number in [0, 1) or None, got {floor!r}")
        super().__init__(p, embedder=embedder, name=name)
        self.by: SegmentBy = by
        self.language = p.language
        self.floor = floor
        self.clip = p.clip

    def language_of(self, sample: Sample) -> str | None:
        """``sample.meta["language"]`` when set, else the metric's ``language``."""
        lang = sample.meta.get("language") if sample.meta else None
        return lang if isinstance(lang, str) and lang else self.language

    def units(self, sample: Sample) -> Units:
        blocks, how = segment_blocks(
            [sample.prediction, *sample.references], self.by, self.language_of(sample)
        )
        return Units(blocks[0], blocks[1:], how)

    def compare(
        self, prediction: list[str], reference: list[str], vectors: Vectors, how: str
    ) -> Score:
        result = cross_similarity(
            np.stack([vectors[s] for s in prediction]),
            np.stack([vectors[s] for s in reference]),
            floor=self.floor,
            clip=self.clip,
        )
        r = "-" if result.r is None else f"{result.r:.3f}"
        r_ref = "-" if result.r_reference is None else f"{result.r_reference:.3f}"
        reason = (
            f"{result.case}: r={r} r'={r_ref} over {len(prediction)}x{len(reference)} "
            f"segments by {how}"
        )
        details: dict[str, float | None] = {
            "r": result.r,
            "r_reference": result.r_reference,
            "unclipped": result.unclipped,
            "best_match": 1.0 if result.case == "best_match" else 0.0,
        }
        return Score(result.value, reason=reason, details=details)

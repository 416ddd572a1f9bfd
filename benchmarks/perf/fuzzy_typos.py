"""How many one-typo queries the ``fuzzy`` retriever fixes, and at what latency, vs ``bm25``.

Corpus: the ``.py`` files of this interpreter's site-packages in sorted path
order, cut into 40-line windows, up to ``--max-chunks`` (20k). All retrievers
index the same chunks with the same code tokens (path tokens included).

Queries (seeded, reproducible): pick a random chunk, take its two rarest
identifiers of 5+ characters (by the number of chunks containing them) and put
one random typo — transposition of two adjacent letters, deletion, insertion
or substitution, never on the first letter — into the rarer one, checking that
the result is not an identifier of the corpus. Two query sets:

* ``single``: the typo'd identifier alone (``"handle_reqeust"``); relevant:
  the chunks containing the clean identifier. The typo is what matters here:
  this set gives the headline ratios.
* ``pair``: the typo'd identifier plus the second one, clean
  (``"handle_reqeust dispatch_table"``); relevant: chunks with both. The clean
  word alone often suffices, so bm25 loses little.

A query is a hit if a relevant chunk is in the top ``k``. Systems: ``fuzzy``
(tantivy backend, defaults), ``fuzzy_first_char`` (typos on the first
character allowed too), ``bm25``, and tantivy's bare constant-score recipe
(``Should(fuzzy_term_query(t, budget))``; docs/stages.md#fuzzy) to show why
the retriever re-scores with BM25. Reported per set: hit rate on typo'd and on
clean queries; "fixed share" (of the queries bm25 answers when clean, how many
each system answers when typo'd); p50/p90/mean latency per typo'd query through
the public ``search()``, one query at a time (tokenisation and top-k included;
term memos cleared before each pass); plus latency on the natural-language
questions of ``/work/shared/data/devsets`` and index build time. Ratios are
fuzzy over bm25. No timed assertions anywhere (docs/architecture.md#testing-conventions).

Usage: ``python benchmarks/perf/fuzzy_typos.py [--max-chunks N] [--queries N]``
writes ``benchmarks/perf/results/fuzzy.json`` (about 30 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tantivy
from perf_common import (  # sibling module: the scripts run standalone
    DEVSETS,
    WINDOW,
    python_windows,
    write_result,
)

from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.fuzzy import FuzzyRetriever, TantivyBackend
from retrieval_bench.types import Chunk

RESULTS = Path(__file__).resolve().parent / "results" / "fuzzy.json"
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{4,}\b")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _typo(word: str, rng: random.Random) -> str:
    """One edit at a letter position after the first."""
    positions = [i for i in range(1, len(word)) if word[i].isalpha()]
    i = rng.choice(positions)
    kind = rng.choice(("transpose", "delete", "insert", "substitute"))
    if kind == "transpose" and i + 1 < len(word) and word[i + 1] != word[i]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    letter = rng.choice([c for c in _LETTERS if c != word[i].lower()])
    if kind == "insert":
        return word[:i] + letter + word[i:]
    return word[:i] + letter + word[i + 1 :]


@dataclass(frozen=True)
class Sample:
    """A sampled chunk's two rarest identifiers, the rarer one typo'd, and the
    relevant chunks of the one-identifier ("single") and two-identifier ("pair") query."""

    typo: str
    rare: str
    other: str
    single: frozenset[str]
    pair: frozenset[str]

    def query(self, query_set: str, typo: bool) -> str:
        word = self.typo if typo else self.rare
        return f"{word} {self.other}" if query_set == "pair" else word

    def relevant(self, query_set: str) -> frozenset[str]:
        return self.pair if query_set == "pair" else self.single


def _queries(chunks: list[Chunk], n: int, seed: int) -> list[Sample]:
    """``n`` samples (see :class:`Sample`), reproducible from ``seed``."""
    idents = [frozenset(_IDENT.findall(c.text)) for c in chunks]
    df = Counter(i for s in idents for i in s)
    rng = random.Random(seed)
    out: list[Sample] = []
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        pick = rng.randrange(len(chunks))
        words = [w for w in idents[pick] if sum(c.isalpha() for c in w[1:]) >= 3]
        if len(words) < 2:
            continue
        rare, other = sorted(words, key=lambda w: (df[w], w))[:2]
        typo = _typo(rare, rng)
        if typo in df or typo.lower() == rare.lower():
            continue
        with_rare = [j for j, s in enumerate(idents) if rare in s]
        single = frozenset(chunks[j].id for j in with_rare)
        pair = frozenset(chunks[j].id for j in with_rare if other in idents[j])
        out.append(Sample(typo, rare, other, single, pair))
    return out


def _constant_score_search(backend: TantivyBackend, tokens: list[str], k: int) -> list[str]:
    """tantivy's bare fuzzy recipe: Should(fuzzy_term_query(t, budget)) — scores count matches."""
    searcher, index = backend._searcher, backend._index
    assert searcher is not None and index is not None
    schema = index.schema
    subs = []
    for t in dict.fromkeys(tokens):
        d = backend.budget.distance(t)
        q = (
            tantivy.Query.fuzzy_term_query(schema, "body", t, d, True)
            if d
            else tantivy.Query.term_query(schema, "body", t)
        )
        subs.append((tantivy.Occur.Should, q))
    if not subs:
        return []
    hits = searcher.search(tantivy.Query.boolean_query(subs), k, count=False).hits
    ords = searcher.fast_field_values("ord", [a for _, a in hits])
    return [backend._chunk_ids[int(o)] for o in ords if o is not None]


def _hit_rate(ranked: list[list[str]], relevant: list[frozenset[str]]) -> list[bool]:
    return [bool(rel.intersection(ids)) for ids, rel in zip(ranked, relevant, strict=True)]


def _timed(
    search: Callable[[str], list[str]], texts: list[str]
) -> tuple[list[list[str]], list[float]]:
    ranked: list[list[str]] = []
    times: list[float] = []
    for text in texts:
        t0 = time.perf_counter()
        ranked.append(search(text))
        times.append(time.perf_counter() - t0)
    return ranked, times


def _latency(times: list[float]) -> dict[str, float]:
    ms = sorted(1000 * t for t in times)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def _ratio(values: dict[str, float], top: str, bottom: str) -> float:
    return round(values[top] / max(values[bottom], 1e-9), 3)


def _natural_questions() -> list[str]:
    texts: list[str] = []
    for path in sorted(DEVSETS.glob("*.jsonl")):
        texts += [json.loads(line)["query"] for line in path.read_text().splitlines() if line]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    k = args.k

    root = Path(sysconfig.get_paths()["purelib"])
    chunks = python_windows(root, args.max_chunks)
    corpus = Corpus(root, chunks)
    samples = _queries(chunks, args.queries, args.seed)

    tokenizer = CodeTokenizer()
    fuzzy = FuzzyRetriever(tokenizer=tokenizer)
    fuzzy_any = FuzzyRetriever(tokenizer=tokenizer, fuzzy_first_char=True)
    bm25 = BM25Retriever(tokenizer=tokenizer)
    index_s = {}
    for label, retriever in (("fuzzy", fuzzy), ("fuzzy_first_char", fuzzy_any), ("bm25", bm25)):
        t0 = time.perf_counter()
        retriever.index(corpus)
        index_s[label] = round(time.perf_counter() - t0, 3)
    backend = fuzzy._tantivy
    assert backend is not None

    def ids_of(retriever: FuzzyRetriever | BM25Retriever) -> Callable[[str], list[str]]:
        return lambda text: retriever.search({"q": text}, k).ids("q")

    systems: dict[str, Callable[[str], list[str]]] = {
        "fuzzy": ids_of(fuzzy),
        "fuzzy_first_char": ids_of(fuzzy_any),
        "bm25": ids_of(bm25),
        "constant_score_fuzzy": lambda text: _constant_score_search(backend, tokenizer(text), k),
    }
    for search in systems.values():  # warm-up
        search("warm up the searchers")

    def reset_memos() -> None:  # each timed pass starts without memoised query terms
        for retriever in (fuzzy, fuzzy_any):
            assert retriever._tantivy is not None
            retriever._tantivy._clauses.clear()

    query_sets: dict[str, dict[str, object]] = {}
    typo_rate: dict[str, dict[str, float]] = {}
    p50: dict[str, dict[str, float]] = {}
    for set_name in ("single", "pair"):
        typo_texts = [q.query(set_name, typo=True) for q in samples]
        clean_texts = [q.query(set_name, typo=False) for q in samples]
        relevant = [q.relevant(set_name) for q in samples]
        typo_hit: dict[str, list[bool]] = {}
        clean_hit: dict[str, list[bool]] = {}
        latency: dict[str, dict[str, float]] = {}
        for name, search in systems.items():
            reset_memos()
            ranked, times = _timed(search, typo_texts)
            typo_hit[name] = _hit_rate(ranked, relevant)
            latency[name] = _latency(times)
            clean_hit[name] = _hit_rate([search(t) for t in clean_texts], relevant)
        answerable = [i for i, h in enumerate(clean_hit["bm25"]) if h]
        typo_rate[set_name] = {n: round(sum(h) / len(h), 4) for n, h in typo_hit.items()}
        p50[set_name] = {n: v["p50_ms"] for n, v in latency.items()}
        query_sets[set_name] = {
            "example": {"typo": typo_texts[0], "clean": clean_texts[0]},
            "hit_rate_typo": typo_rate[set_name],
            "hit_rate_clean": {n: round(sum(h) / len(h), 4) for n, h in clean_hit.items()},
            "fixed_share": {
                "of_clean_queries_bm25_answers": len(answerable),
                **{
                    n: round(sum(h[i] for i in answerable) / max(len(answerable), 1), 4)
                    for n, h in typo_hit.items()
                },
            },
            "latency_typo": latency,
        }

    natural = _natural_questions()
    natural_latency = {}
    for name in ("fuzzy", "bm25"):
        reset_memos()
        natural_latency[name] = _latency(_timed(systems[name], natural)[1]) if natural else {}

    nat_ratio = None
    if natural:
        nat_ratio = round(natural_latency["fuzzy"]["p50_ms"] / natural_latency["bm25"]["p50_ms"], 3)
    result = {
        "benchmark": "fuzzy_typos",
        "corpus": {
            "source": "site-packages .py files",
            "chunks": len(chunks),
            "window_lines": WINDOW,
        },
        "queries": len(samples),
        "k": k,
        "seed": args.seed,
        "query_sets": query_sets,
        "natural_questions": {"queries": len(natural), "latency": natural_latency},
        "index_s": index_s,
        "ratios": {
            "typo_recall_fuzzy_over_bm25": _ratio(typo_rate["single"], "fuzzy", "bm25"),
            "typo_recall_fuzzy_over_bm25_pair": _ratio(typo_rate["pair"], "fuzzy", "bm25"),
            "latency_p50_fuzzy_over_bm25": _ratio(p50["single"], "fuzzy", "bm25"),
            "latency_p50_fuzzy_over_bm25_pair": _ratio(p50["pair"], "fuzzy", "bm25"),
            "latency_p50_fuzzy_over_bm25_natural": nat_ratio,
            "index_time_fuzzy_over_bm25": round(index_s["fuzzy"] / index_s["bm25"], 3),
        },
        "impl": {
            "fuzzy": f"FuzzyRetriever, tantivy {getattr(tantivy, '__version__', '?')}, "
            "0/1/2 typos at <5/5-8/>=9 chars, first character never fuzzed",
            "fuzzy_first_char": "same, fuzzy_first_char=True",
            "bm25": "BM25Retriever (bm25s, lucene)",
            "constant_score_fuzzy": "Should(fuzzy_term_query(t, budget)) on the fuzzy body field",
        },
    }
    write_result(args.out, result)
    print(f"{len(chunks)} chunks, {len(samples)} one-typo queries per set, k={k}")
    for set_name, qs in query_sets.items():
        print(f"[{set_name}] e.g. {qs['example']}")
        for key in ("hit_rate_typo", "hit_rate_clean", "fixed_share"):
            print(f"  {key}: {qs[key]}")
        print(f"  p50 ms (typo'd): {p50[set_name]}")
    print(f"natural questions ({len(natural)}): {natural_latency}")
    print(f"index s: {index_s}\nratios: {result['ratios']}\nwrote {args.out}")


if __name__ == "__main__":
    main()

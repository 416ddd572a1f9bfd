"""Cost of the issue-reading and file-level rungs against plain bm25 and exact
(docs/stages.md#reading-an-issue, docs/stages.md#from-chunks-to-files),
and of the ``ltr`` fusion over six of them (docs/stages.md#learning-to-rank).

Corpus: the SWE-bench Lite dev snapshots (``../shared/data/swebench-lite-dev``),
each unpacked to a temp folder and chunked once with the ``ast`` chunker
(budget 512), outside the timings. Queries: all 22 issue texts, asked of every
snapshot (the per-query cost depends on the issue's length, not on whether
it belongs to the snapshot).

Timed per rung and snapshot: ``index()`` with the process's token memo emptied
first (every rung tokenises from scratch, as the first stage of a run does),
then ``search()`` of the 22 issues at k = 50 (ripgrep's process start included
for ``exact``); for ``ltr``, ``fuse()`` over the six source runs (the bundled
model, loaded outside the timing); for ``code-graph``, ``rerank()`` of the
chosen files-issue run, its per-snapshot graph (parse, symbol table) built
inside the timing, so its ms per query include 1/22 of the graph. Reported:
index seconds per snapshot (mean), ms per query (mean over all searches), and
the ratio of each to ``bm25``'s, measured in the same run (perf lives in
benchmarks/perf, never as timed assertions in tests).

Usage: ``python benchmarks/perf/issue_rungs.py [--snapshots N]``
writes ``benchmarks/perf/results/issue_rungs.json``.
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_common import write_result  # sibling module: the scripts run standalone

from retrieval_bench.chunking.ast import AstChunker
from retrieval_bench.contracts.chunker import chunk_tree
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.rank_fusion.ltr import LTRFusion
from retrieval_bench.reranking.code_graph import CodeGraphReranker
from retrieval_bench.retrieval import token_memo
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.exact import ExactRetriever
from retrieval_bench.retrieval.file_bm25 import FileBM25Retriever
from retrieval_bench.types import Run

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "swebench-lite-dev"
OUT = Path(__file__).resolve().parent / "results" / "issue_rungs.json"
ISSUE = {"query": "issue", "path_boost": 0.5}
RUNGS: dict[str, Any] = {
    "bm25": lambda: BM25Retriever(),
    "bm25 query: issue": lambda: BM25Retriever(**ISSUE),
    "exact identifiers": lambda: ExactRetriever(terms="identifiers"),
    "exact terms: issue": lambda: ExactRetriever(terms="issue", max_terms=48),
    "bm25-files doc: file": lambda: FileBM25Retriever(),
    "bm25-files doc: chunks max": lambda: FileBM25Retriever(doc="chunks", aggregate="max"),
    "bm25-files doc: chunks mean3": lambda: FileBM25Retriever(doc="chunks", aggregate="mean"),
    "bm25-files chosen (files-issue)": lambda: FileBM25Retriever(
        doc="chunks", aggregate="mean", test_weight=0.0, **ISSUE
    ),
}
LTR_SOURCES = {  # the bundled ltr model's input stages → the rung above that is each
    "bm25": "bm25",
    "bm25-issue": "bm25 query: issue",
    "exact-issue": "exact terms: issue",
    "files-whole": "bm25-files doc: file",
    "files-max": "bm25-files doc: chunks max",
    "files-issue": "bm25-files chosen (files-issue)",
}
LTR_MODEL = Path(__file__).resolve().parents[1] / "models" / "ltr-history.json"
LTR = "ltr (fusion only; its inputs are the six rungs above)"
GRAPH = "code-graph over files-issue (graph + rerank)"
GRAPH_PARAMS = {"top_n": 3, "import_weight": 0.1, "issue_weight": 0.1, "call_weight": 0.5,
                "test_weight": 0.0}  # the configs' setting  # fmt: skip


def snapshots(limit: int) -> tuple[list[Path], dict[str, str]]:
    rows = [
        json.loads(line)
        for line in (DATA / "swebench-lite-dev.jsonl").read_text().splitlines()
        if line.strip()
    ]
    return [DATA / r["snapshot"] for r in rows[:limit]], {r["id"]: r["query"] for r in rows}


def corpus_of(tarball: Path, into: Path) -> Corpus:
    with tarfile.open(tarball, "r:gz") as tar:
        tar.extractall(into, filter="data")
    root = next(p for p in into.iterdir() if p.is_dir())
    chunks = list(chunk_tree(root, AstChunker(budget=512)))
    return Corpus(root, chunks)


def time_rung(make: Any, corpus: Corpus, queries: dict[str, str]) -> tuple[float, float, Run]:
    token_memo._MEMOS.clear()  # cold tokenisation for every rung
    retriever: Retriever = make()
    t0 = time.perf_counter()
    retriever.index(corpus)
    t1 = time.perf_counter()
    run = retriever.search(queries, 50)
    t2 = time.perf_counter()
    return t1 - t0, (t2 - t1) / len(queries), run


def time_graph(corpus: Corpus, queries: dict[str, str], files_issue: Run) -> float:
    """Seconds per query of the code-graph reranker, its graph built inside the timing."""
    reranker = CodeGraphReranker(**GRAPH_PARAMS)
    t0 = time.perf_counter()
    reranker.rerank(queries, files_issue, corpus, 50)
    return (time.perf_counter() - t0) / len(queries)


def time_ltr(runs: dict[str, Run], n_queries: int) -> float:
    """Seconds per query of the ltr fusion over its sources' runs (model load excluded)."""
    fusion = LTRFusion(model_file=str(LTR_MODEL))
    named = [Run(label, runs[rung].scores) for label, rung in LTR_SOURCES.items()]
    t0 = time.perf_counter()
    fusion.fuse(named, 50)
    return (time.perf_counter() - t0) / n_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=22)
    args = parser.parse_args()
    tarballs, queries = snapshots(args.snapshots)
    index_s: dict[str, list[float]] = {name: [] for name in [*RUNGS, LTR, GRAPH]}
    query_s: dict[str, list[float]] = {name: [] for name in [*RUNGS, LTR, GRAPH]}
    chunks = files = 0
    for tarball in tarballs:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = corpus_of(tarball, Path(tmp))
            chunks += len(corpus.chunks)
            files += len(corpus.paths)
            runs = {}
            for name, make in RUNGS.items():
                i, q, runs[name] = time_rung(make, corpus, queries)
                index_s[name].append(i)
                query_s[name].append(q)
            index_s[LTR].append(0.0)
            query_s[LTR].append(time_ltr(runs, len(queries)))
            index_s[GRAPH].append(0.0)
            query_s[GRAPH].append(
                time_graph(corpus, queries, runs["bm25-files chosen (files-issue)"])
            )
        print(f"{tarball.name}: {len(corpus.paths)} files, {len(corpus.chunks)} chunks")
    base_i = sum(index_s["bm25"]) / len(tarballs)
    base_q = sum(query_s["bm25"]) / len(tarballs)
    rows = {}
    print(f"\n{'rung':54}{'index s':>10}{'x bm25':>8}{'ms/query':>10}{'x bm25':>8}")
    for name in [*RUNGS, LTR, GRAPH]:
        i = sum(index_s[name]) / len(tarballs)
        q = sum(query_s[name]) / len(tarballs)
        rows[name] = {
            "index_s": i,
            "ms_per_query": 1000 * q,
            "index_vs_bm25": i / base_i,
            "query_vs_bm25": q / base_q,
        }
        print(f"{name:54}{i:10.3f}{i / base_i:8.2f}{1000 * q:10.1f}{q / base_q:8.2f}")
    write_result(
        OUT,
        {
            "snapshots": len(tarballs),
            "files": files,
            "chunks": chunks,
            "queries_per_snapshot": len(queries),
            "rungs": rows,
        },
    )


if __name__ == "__main__":
    main()

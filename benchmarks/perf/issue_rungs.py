"""Cost of the issue-reading and file-level rungs against plain bm25 and exact
(docs/stages.md#reading-an-issue, docs/stages.md#from-chunks-to-files).

Corpus: the SWE-bench Lite dev snapshots (``../shared/data/swebench-lite-dev``),
each unpacked to a temp folder and chunked once with the ``ast`` chunker
(budget 512), outside the timings. Queries: all 22 issue texts, asked of every
snapshot (the per-query cost depends on the issue's length, not on whether
it belongs to the snapshot).

Timed per rung and snapshot: ``index()`` with the process's token memo emptied
first (every rung tokenises from scratch, as the first stage of a run does),
then ``search()`` of the 22 issues at k = 50 (ripgrep's process start included
for ``exact``). Reported: index seconds per snapshot (mean), ms per query
(mean over all searches), and the ratio of each to ``bm25``'s, measured in
the same run (perf lives in benchmarks/perf, never as timed assertions in tests).

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
from retrieval_bench.chunking.base import chunk_tree
from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval import bm25_index
from retrieval_bench.retrieval.base import Retriever
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.retrieval.exact import ExactRetriever
from retrieval_bench.retrieval.file_bm25 import FileBM25Retriever

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "swebench-lite-dev"
OUT = Path(__file__).resolve().parent / "results" / "issue_rungs.json"
ISSUE = {"query": "issue", "path_boost": 0.5}
RUNGS: dict[str, Any] = {
    "bm25": lambda: BM25Retriever(),
    "bm25 query: issue": lambda: BM25Retriever(**ISSUE),
    "exact identifiers": lambda: ExactRetriever(terms="identifiers"),
    "exact terms: issue": lambda: ExactRetriever(terms="issue", max_terms=48),
    "bm25-files doc: file": lambda: FileBM25Retriever(),
    "bm25-files doc: chunks mean3": lambda: FileBM25Retriever(doc="chunks", aggregate="mean"),
    "bm25-files chosen (files-issue)": lambda: FileBM25Retriever(
        doc="chunks", aggregate="mean", test_weight=0.0, **ISSUE
    ),
}


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


def time_rung(make: Any, corpus: Corpus, queries: dict[str, str]) -> tuple[float, float]:
    bm25_index._MEMOS.clear()  # cold tokenisation for every rung
    retriever: Retriever = make()
    t0 = time.perf_counter()
    retriever.index(corpus)
    t1 = time.perf_counter()
    retriever.search(queries, 50)
    t2 = time.perf_counter()
    return t1 - t0, (t2 - t1) / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=22)
    args = parser.parse_args()
    tarballs, queries = snapshots(args.snapshots)
    index_s: dict[str, list[float]] = {name: [] for name in RUNGS}
    query_s: dict[str, list[float]] = {name: [] for name in RUNGS}
    chunks = files = 0
    for tarball in tarballs:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = corpus_of(tarball, Path(tmp))
            chunks += len(corpus.chunks)
            files += len(corpus.paths)
            for name, make in RUNGS.items():
                i, q = time_rung(make, corpus, queries)
                index_s[name].append(i)
                query_s[name].append(q)
        print(f"{tarball.name}: {len(corpus.paths)} files, {len(corpus.chunks)} chunks")
    base_i = sum(index_s["bm25"]) / len(tarballs)
    base_q = sum(query_s["bm25"]) / len(tarballs)
    rows = {}
    print(f"\n{'rung':34}{'index s':>10}{'x bm25':>8}{'ms/query':>10}{'x bm25':>8}")
    for name in RUNGS:
        i = sum(index_s[name]) / len(tarballs)
        q = sum(query_s[name]) / len(tarballs)
        rows[name] = {
            "index_s": i,
            "ms_per_query": 1000 * q,
            "index_vs_bm25": i / base_i,
            "query_vs_bm25": q / base_q,
        }
        print(f"{name:34}{i:10.3f}{i / base_i:8.2f}{1000 * q:10.1f}{q / base_q:8.2f}")
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

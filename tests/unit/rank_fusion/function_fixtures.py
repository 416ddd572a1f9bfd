"""A two-file Python snapshot for the ``function-ranker`` tests
(docs/stages.md#function-ranker), chunked in line windows."""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.corpus import Corpus
from retrieval_bench.files import SourceFile
from retrieval_bench.types import Run
from tests.unit.retrieval.conftest import window_chunks

CART = '''import os


class Cart:
    """A shopping cart."""

    def add_item(self, item):
        self.items.append(item)
        return compute_total(self.items)

    @property
    def size(self):
        return len(self.items)

    @size.setter
    def size(self, value):
        raise AttributeError("read only")


def compute_total(items):
    def price_of(x):
        return x.price
    return sum(price_of(i) for i in items)
'''
UTIL = """def round_cents(amount):
    return round(amount, 2)


def log_event(name):
    print(name)
"""
TEST = """def test_total():
    assert compute_total([]) == 0
"""
FILES = {"shop/cart.py": CART, "shop/util.py": UTIL, "tests/test_cart.py": TEST, "README.md": "x\n"}


def write_corpus(root: Path, files: dict[str, str] = FILES) -> Corpus:
    """``files`` written under ``root`` and chunked in 5-line windows."""
    chunks = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        chunks += window_chunks(SourceFile(rel, text, "python"), 5)
    return Corpus(root, chunks)


def chunk_run(corpus: Corpus, name: str, order: list[str], query: str = "q") -> Run:
    """A chunk run ranking the first chunk of each file of ``order``, in that order."""
    ids = [corpus.chunks_of(path)[0].id for path in order]
    return Run(name, {query: {cid: float(len(ids) - i) for i, cid in enumerate(ids)}})

"""``python -m retrieval_bench.cli``: the same as ``rbench``."""

from retrieval_bench.cli import console

console()

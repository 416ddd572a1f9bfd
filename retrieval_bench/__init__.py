"""retrieval_bench: measure and tune retrieval over codebases, stage by stage."""

from retrieval_bench.version import __version__

__all__ = ["__version__"]

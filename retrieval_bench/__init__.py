"""retrieval_bench: measure and tune retrieval over codebases, stage by stage."""

__version__ = "0.1.0"

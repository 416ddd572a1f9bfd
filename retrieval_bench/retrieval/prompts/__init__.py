"""Prompt texts of the LLM-driven retrievers, shipped as package data.

One ``.txt`` file per prompt, filled with :meth:`str.format` (so a literal
brace in a template must be doubled). Packaging: the files must be listed as
package data: ``"retrieval_bench.retrieval" = ["prompts/*.txt"]`` in pyproject.toml.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.txt`` (read once per process)."""
    return files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")

"""The LLM settings: which OpenAI-compatible server, which model, and how to call it.

One type for the ``llm:`` section of a config (:mod:`retrieval_bench.config`
uses it as is) and for the client (:class:`~retrieval_bench.llm.client.LLMClient`),
so a setting is declared once. See docs/configuration.md for the section.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_API_KEY = "sk-local"
"""The key sent when ``api_key_env`` names no set variable (a local server needs none)."""


class LLMSpec(BaseModel):
    """The ``llm:`` section: which OpenAI-compatible server the LLM stages use."""

    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None
    """None = the embedded local server (started on demand when none runs; a run
    stops the server it started when it ends, unless ``keep_server``)."""
    keep_server: bool = Field(default=False, exclude=True)
    """Keep a local server this run started on demand running after it ends
    (``--keep-llm-server``). Not part of the stored config: it cannot change results."""
    model: str = "smollm2"
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (never the key itself)."""
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    concurrency: int = Field(default=1, ge=1)
    cache: bool = True
    cost_per_1k_prompt: float = 0.0
    cost_per_1k_completion: float = 0.0

    def api_key(self) -> str:
        """The key from the environment variable ``api_key_env`` (or :data:`DEFAULT_API_KEY`)."""
        return os.environ.get(self.api_key_env, DEFAULT_API_KEY)

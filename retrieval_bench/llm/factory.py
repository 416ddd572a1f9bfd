"""Build the configured LLM client (SPEC §5): the local server by default, any
OpenAI-compatible endpoint with one config change (``llm.base_url``)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.client import ClientSettings, LLMClient
from retrieval_bench.llm.local_server import MODEL_ALIAS, LocalServer
from retrieval_bench.workspace import Workspace


class LLMSpec(BaseModel):
    """The ``llm:`` section of a benchmark config."""

    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None
    """None = the embedded local server (started on demand, reused afterwards)."""
    model: str = MODEL_ALIAS
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (never the key itself)."""
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    concurrency: int = Field(default=1, ge=1)
    cache: bool = True
    cost_per_1k_prompt: float = 0.0
    cost_per_1k_completion: float = 0.0


def make_llm(spec: LLMSpec | None = None, ws: Workspace | None = None) -> LLMClient:
    spec = spec or LLMSpec()
    ws = ws or Workspace.default()
    base_url = spec.base_url or LocalServer(ws).start().base_url
    settings = ClientSettings(
        base_url=base_url,
        model=spec.model,
        api_key=os.environ.get(spec.api_key_env, "sk-local"),
        timeout_s=spec.timeout_s,
        max_retries=spec.max_retries,
        backoff_s=spec.backoff_s,
        concurrency=spec.concurrency,
        cost_per_1k_prompt=spec.cost_per_1k_prompt,
        cost_per_1k_completion=spec.cost_per_1k_completion,
    )
    cache = ResponseCache.in_dir(ws.cache_dir) if spec.cache else None
    return LLMClient(settings, cache)

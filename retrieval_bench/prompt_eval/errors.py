"""Errors of the prompt-evaluation workflow (docs/architecture.md#prompt-evaluation,
docs/architecture.md#bad-input-and-failures).

Each message is one line naming the input (use case, row, prompt, file and
line) and what to do. Bad input derives from :class:`ConfigError` or
:class:`DatasetError`, so the CLI exits 2 for it; a refused stale write exits 1.
"""

from __future__ import annotations

from retrieval_bench.errors import ConfigError, DatasetError, RBenchError


class PromptEvalError(RBenchError):
    """Base class of the errors below."""


class UnknownUseCaseError(PromptEvalError, ConfigError):
    """No use case registered (or importable) under that name."""


class InvalidRowError(PromptEvalError, DatasetError):
    """A ground-truth row fails the use case's validation (``process``)."""


class InvalidPromptError(PromptEvalError, ConfigError):
    """A prompt template names an unknown variable or has bad parameters."""


class ImportFormatError(PromptEvalError, DatasetError):
    """A JSON/JSONL/CSV file to import is malformed; the message names the line."""


class NotFoundError(PromptEvalError, ConfigError):
    """No row, prompt or run with that id/name."""


class StaleWriteError(PromptEvalError):
    """An edit was based on an older version than the stored one (optimistic versioning)."""

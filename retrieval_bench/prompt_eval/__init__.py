"""Prompt evaluation (docs/architecture.md#prompt-evaluation): use cases defined in
Python, ground-truth rows and prompt templates stored with every edit, runs over a cached model with
per-field match counts, a baseline comparison with a significance test, and a
helper that fails a test suite on a prompt or model regression.

    from retrieval_bench.prompt_eval import get_use_case, PromptStore, run_use_case
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real types for type checkers; at run time see __getattr__
    from retrieval_bench.prompt_eval.errors import (
        ImportFormatError,
        InvalidPromptError,
        InvalidRowError,
        NotFoundError,
        PromptEvalError,
        StaleWriteError,
        UnknownUseCaseError,
    )
    from retrieval_bench.prompt_eval.records import (
        BaselineComparison,
        EvaluationRun,
        Prompt,
        PromptResult,
        Row,
        RowOutcome,
    )
    from retrieval_bench.prompt_eval.runner import run_prompts, run_use_case
    from retrieval_bench.prompt_eval.store import PromptStore
    from retrieval_bench.prompt_eval.usecase import (
        ExampleData,
        UseCase,
        get_use_case,
        register_use_case,
        use_case_names,
    )

_EXPORTS = {
    "ImportFormatError": "errors",
    "InvalidPromptError": "errors",
    "InvalidRowError": "errors",
    "NotFoundError": "errors",
    "PromptEvalError": "errors",
    "StaleWriteError": "errors",
    "UnknownUseCaseError": "errors",
    "BaselineComparison": "records",
    "EvaluationRun": "records",
    "Prompt": "records",
    "PromptResult": "records",
    "Row": "records",
    "RowOutcome": "records",
    "run_prompts": "runner",
    "run_use_case": "runner",
    "PromptStore": "store",
    "ExampleData": "usecase",
    "UseCase": "usecase",
    "get_use_case": "usecase",
    "register_use_case": "usecase",
    "use_case_names": "usecase",
}
"""Public name → submodule; imported on first use so that ``rbench`` stays quick."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "BaselineComparison",
    "EvaluationRun",
    "ExampleData",
    "ImportFormatError",
    "InvalidPromptError",
    "InvalidRowError",
    "NotFoundError",
    "Prompt",
    "PromptEvalError",
    "PromptResult",
    "PromptStore",
    "Row",
    "RowOutcome",
    "StaleWriteError",
    "UnknownUseCaseError",
    "UseCase",
    "get_use_case",
    "register_use_case",
    "run_prompts",
    "run_use_case",
    "use_case_names",
]

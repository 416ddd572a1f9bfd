"""What ``rbench fit-dense`` records and prints (docs/stages.md#fit-dense): the model
folder's manifest (base model, repositories with their commit ranges and counts, the
data's fingerprint, hyper-parameters, the command line that rebuilds it, versions),
the held-out check run on the folder being built
(docs/stages.md#validating-on-held-out-questions), and the one-screen summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import command_line


def validation_check(
    held_out: list[Any], base_embed: Callable[[list[str]], Any], query_prefix: str
) -> Callable[[Path], dict[str, Any]]:
    """The check ``write_model_folder`` runs on the folder it builds: the held-out questions
    ranked by its int8 export (as ``dense`` reads it) and by the base model
    (docs/stages.md#validating-on-held-out-questions)."""
    from retrieval_bench.dense_training.selection import as_embed
    from retrieval_bench.dense_training.validation import validate
    from retrieval_bench.index.onnx_backend import OnnxEmbedder

    def check(folder: Path) -> dict[str, Any]:
        embed = as_embed(
            OnnxEmbedder(folder, folder / ".unused", backend="onnx-int8", name="validation")
        )
        started = time.perf_counter()
        report = validate(
            held_out, base_embed, lambda qs: embed([query_prefix + q for q in qs]), embed
        )
        report["seconds"] = round(time.perf_counter() - started, 1)
        return report

    return check


def build_manifest(
    args: argparse.Namespace,
    base: Path,
    mined: list[Any],
    held_out: list[Any],
    chosen: Any,
    settings: Any,
    stats: Any,
    device: str,
    started: datetime,
) -> dict[str, Any]:
    from retrieval_bench.index.embed import DEFAULT_MODEL_NAME
    from retrieval_bench.index.onnx_backend import export_dir
    from retrieval_bench.store.provenance import package_versions

    data = hashlib.sha256()
    for i in chosen.instances:
        data.update(json.dumps([i.question, i.query, i.positive, i.negatives]).encode() + b"\n")
    ranks = sorted(chosen.positive_ranks)
    held = Counter(q.repo for q in held_out)
    return {
        "created_by": "rbench fit-dense",
        "command": command_line(
            args,
            "fit-dense",
            args.repos,
            (
                "last",
                "max_questions",
                "holdout",
                "pool_files",
                "pool_size",
                "filter_top",
                "hard_negatives",
                "epochs",
                "batch_size",
                "lr",
                "max_seq_length",
                "seed",
                "query_prefix",
                "base",
            ),
            ("onnx_only",),
        ),  # fmt: skip
        "started": started.isoformat(timespec="seconds"),
        "base_model": {
            "name": base.name if args.base else DEFAULT_MODEL_NAME,
            "export": export_dir(base, Path("")).name,
        },
        "inference": {"query_prefix": settings.query_prefix, "document_path": True},
        "training": {
            "repositories": [
                {
                    "name": m.repo,
                    "first_commit": m.first_commit,
                    "last_commit": m.last_commit,
                    "questions": len(m.questions),
                    "pairs": chosen.pairs[m.repo],
                    "kept": chosen.kept[m.repo],
                    "dropped": dict(m.dropped),
                    "held_out": held[m.repo],
                }
                for m in mined
            ],
            "pairs": sum(chosen.pairs.values()),
            "kept": len(chosen.instances),
            "dropped": dict(chosen.dropped),
            "base_median_rank": ranks[len(ranks) // 2] if ranks else None,
            "data_fingerprint": data.hexdigest(),
            "selection": {
                "last": args.last,
                "max_questions": args.max_questions,
                "pool_files": args.pool_files,
                "pool_size": args.pool_size,
                "filter_top": args.filter_top,
                "hard_negatives": args.hard_negatives,
            },
        },
        "hyper_parameters": settings.to_dict(),
        "train": {
            "device": device,
            "steps": stats.steps,
            "sequences": stats.sequences,
            "seconds": round(stats.seconds, 1),
            "sequences_per_second": round(stats.sequences_per_second, 2),
            "first_loss": round(stats.first_loss, 4),
            "last_loss": round(stats.last_loss, 4),
        },
        "versions": package_versions(
            ["retrieval-bench", "torch", "sentence-transformers", "transformers", "onnxruntime"]
        ),
    }


def print_summary(manifest: dict[str, Any], out: Path) -> None:
    t, tr = manifest["training"], manifest["train"]
    for r in t["repositories"]:
        print(f"  {r['name']}: {r['questions']} questions, {r['pairs']} pairs, {r['kept']} kept")
    print(
        f"pairs {t['pairs']}, kept by the filter {t['kept']} ({t['dropped']}); "
        f"base model's median rank of a positive {t['base_median_rank']}"
    )
    print(
        f"trained {tr['steps']} steps on {tr['device']} in {tr['seconds']} s "
        f"({tr['sequences_per_second']} sequences/s), loss {tr['first_loss']} → "
        f"{tr['last_loss']}"
    )
    c = manifest["int8_check"]
    print(f"int8 export: cosine to float min {c['min_cosine']}, mean {c['mean_cosine']}")
    v = manifest.get("validation")
    if v is None:
        print("no held-out validation (--holdout F measures the model against its base)")
    else:
        b, m = v["base"], v["trained"]
        print(
            f"held out, the newest {v['questions']} questions (median {v['median_candidates']} "
            f"candidates): MRR {b['MRR']} → {m['MRR']} (Δ {v['delta_MRR']:+}, p {v['p_MRR']}), "
            f"Acc@1 {b['Acc@1']} → {m['Acc@1']}, Acc@5 {b['Acc@5']} → {m['Acc@5']}"
        )
    size = sum(manifest["files"].values()) / 2**20
    print(
        f"wrote {out} ({size:.1f} MiB); use it with dense: {{model_path: {out}, "
        "backend: onnx-int8}"
    )

"""``rbench fit-dense REPO... --out DIR``: train a code retriever on repositories'
histories (docs/stages.md#fit-dense).

Mines questions (commit message → the functions it modified) from each
repository (a git folder, a bare repository or a bundle), scores them with the
base model to keep consistent pairs and pick hard negatives, trains, and writes a
model folder the ``dense`` stage reads with ``model_path:``. A repository of
SWE-bench (pytest, flask, requests, django, …: the benchmark this project is
judged on) is refused unless ``--allow-swebench-repos``: a model trained on their
fixes must never be reported on SWE-bench-style questions. An ``--out`` that
exists (without ``--force``) or whose parent folder is missing, an unknown
repository and nothing left to train on are one-line errors (exit 2).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval_bench.cli.common import EXIT_OK, reporter, workspace
from retrieval_bench.cli.fit_dense_manifest import build_manifest, print_summary, validation_check
from retrieval_bench.errors import ConfigError, DatasetError

SWEBENCH_REPOS = frozenset(
    {
        "pytest",
        "flask",
        "requests",
        "sympy",
        "sphinx",
        "astropy",
        "pylint",
        "xarray",
        "seaborn",
        "django",
        "matplotlib",
        "scikit-learn",
        "scikit_learn",
        "sklearn",
    }
)
"""Repositories of SWE-bench Lite and Verified (their histories hold the test fixes)."""


def repo_name(source: str) -> tuple[str, str]:
    """(name, path) of a ``NAME=PATH`` or ``PATH`` argument; the name defaults to the
    file or folder name without ``.bundle``/``.git``."""
    name, sep, path = source.partition("=")
    if not sep or "/" in name:
        path = source
        name = Path(source.rstrip("/")).name
        for suffix in (".bundle", ".git"):
            name = name.removesuffix(suffix)
    return name, path


def cmd_fit_dense(args: argparse.Namespace) -> int:
    from retrieval_bench.dense_training.model_folder import write_model_folder
    from retrieval_bench.dense_training.questions import mine_questions
    from retrieval_bench.dense_training.selection import as_embed, select
    from retrieval_bench.dense_training.trainer import TrainSettings, train
    from retrieval_bench.dense_training.validation import split_newest
    from retrieval_bench.index.embed import CachedEmbedder, EmbeddingCache, default_model_path
    from retrieval_bench.index.onnx_backend import OnnxEmbedder
    from retrieval_bench.index.runtime import resolve_device
    from retrieval_bench.progress import for_label
    from retrieval_bench.snapshot.mirrors import open_mirror

    out = _check_out(Path(args.out), args.force)
    repos = [repo_name(r) for r in args.repos]
    refused = sorted({n for n, _ in repos if n.lower() in SWEBENCH_REPOS})
    if refused and not args.allow_swebench_repos:
        raise ConfigError(
            f"fit-dense: {', '.join(refused)} is a SWE-bench repository: its history holds "
            "the benchmark's fixes; train on other repositories (or pass --allow-swebench-repos "
            "and never report the model on SWE-bench-style questions)"
        )
    for name, path in repos:
        if not Path(path).exists():
            raise DatasetError(f"fit-dense: repository {name} at {path} does not exist")
    ws = workspace(args)
    base = Path(args.base) if args.base else default_model_path()
    started, clock = datetime.now(UTC), time.perf_counter()
    mined = []
    with reporter(not args.json) as progress:
        for name, path in repos:
            mirror = open_mirror(
                path,
                ws.cache_dir,
                label=f"fit-dense {name}",
                todo="give a git repository, bare repository or bundle",
            )
            mined.append(
                mine_questions(
                    mirror,
                    name,
                    last=args.last,
                    max_questions=args.max_questions,
                    pool_files=args.pool_files,
                    pool_size=args.pool_size,
                    seed=args.seed,
                    progress=for_label(progress, f"mine {name}"),
                )
            )
        questions, held_out = split_newest([q for m in mined for q in m.questions], args.holdout)
        if not questions:
            raise DatasetError(
                "fit-dense: no question with a gold function was mined; "
                "give more history (--last) or other repositories"
            )
        embedder = CachedEmbedder(
            OnnxEmbedder(
                base,
                ws.cache_dir / "models",
                backend="onnx-int8",
                name=base.name,
                threads=args.threads,
            ),
            EmbeddingCache.in_dir(ws.embeddings_uri),
        )
        chosen = select(
            questions,
            as_embed(embedder),
            filter_top=args.filter_top,
            hard_negatives=args.hard_negatives,
            progress=for_label(progress, "base model"),
        )
        if not chosen.instances:
            raise DatasetError(
                f"fit-dense: the filter kept none of {sum(chosen.pairs.values())} "
                "pairs; raise --filter-top or give more history"
            )
        settings = TrainSettings(
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            max_seq_length=args.max_seq_length,
            seed=args.seed,
            query_prefix=args.query_prefix,
        )
        device = resolve_device(args.device)
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        model, stats = train(
            base,
            chosen.instances,
            settings,
            device=device,
            progress=for_label(progress, "train"),
        )
    manifest = build_manifest(args, base, mined, held_out, chosen, settings, stats, device, started)
    manifest["seconds"] = round(time.perf_counter() - clock, 1)
    check = [i.positive for i in chosen.instances[:64]] + [i.query for i in chosen.instances[:64]]
    if out.exists():  # --force: the old folder goes only once the new one is trained
        shutil.rmtree(out)
    validate = (
        validation_check(held_out, as_embed(embedder), args.query_prefix) if held_out else None
    )
    written = write_model_folder(
        out, model, manifest, check_texts=check, onnx_only=args.onnx_only, validate=validate
    )
    summary: dict[str, Any] = {
        k: written[k]
        for k in ("training", "train", "int8_check", "validation", "fingerprint")
        if k in written
    }
    summary["out"] = str(out)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print_summary(written, out)
    return EXIT_OK


def _check_out(out: Path, force: bool) -> Path:
    """The model folder to write, refused before any work when it may not be written."""
    if not out.parent.is_dir():
        raise ConfigError(f"fit-dense: --out {out}: its folder {out.parent} does not exist")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"fit-dense: --out {out} is a file; give a folder to create")
    if out.exists() and not force:
        raise ConfigError(f"fit-dense: --out {out} exists; choose another folder or --force")
    return out.resolve()


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def add_fit_dense_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    """``rbench fit-dense REPO... --out DIR``."""
    f = sub.add_parser("fit-dense", help="train a code retriever on repositories' git histories")
    f.add_argument(
        "repos",
        nargs="+",
        metavar="REPO",
        help="git folder, bare repository or bundle (NAME=PATH to name it)",
    )
    f.add_argument("--out", required=True, metavar="DIR", help="model folder to create")
    f.add_argument("--force", action="store_true", help="replace an existing --out folder")
    f.add_argument(
        "--base",
        metavar="DIR",
        help="sentence-transformers folder to start from (default: packaged MiniLM)",
    )
    f.add_argument(
        "--last",
        type=positive_int,
        default=600,
        help="newest first-parent commits mined per repository",
    )
    f.add_argument(
        "--max-questions",
        type=positive_int,
        default=200,
        help="newest questions kept per repository",
    )
    f.add_argument(
        "--pool-files",
        type=int,
        default=3,
        help="other files of the snapshot whose definitions join the negatives' pool",
    )
    f.add_argument("--pool-size", type=positive_int, default=64, help="pool size per question")
    f.add_argument(
        "--filter-top",
        type=positive_int,
        default=20,
        help="keep a pair when the base model ranks its positive this high in the pool",
    )
    f.add_argument("--hard-negatives", type=int, default=1, help="hard negatives per instance")
    f.add_argument(
        "--holdout",
        type=_fraction,
        default=0.0,
        metavar="F",
        help="hold the newest F of each repository's questions out of training and "
        "compare the model with its base on them (default 0: none)",
    )
    f.add_argument("--epochs", type=positive_int, default=1, help="passes over the instances")
    f.add_argument(
        "--batch-size",
        type=positive_int,
        default=16,
        help="instances per step (in-batch negatives)",
    )
    f.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate")
    f.add_argument(
        "--max-seq-length",
        type=positive_int,
        default=128,
        help="word pieces per text while training",
    )
    f.add_argument(
        "--query-prefix", default="", help="text before every query (kept for inference)"
    )
    f.add_argument("--seed", type=int, default=0, help="seed of sampling, shuffling and torch")
    f.add_argument("--device", help="cpu, cuda, cuda:N or auto (default $RBENCH_DEVICE, else auto)")
    f.add_argument("--threads", type=int, help="CPU threads for training and the base model")
    f.add_argument(
        "--onnx-only",
        action="store_true",
        help="keep only the int8 ONNX export (runs with backend: onnx-int8)",
    )
    f.add_argument(
        "--allow-swebench-repos",
        action="store_true",
        help="train on a SWE-bench repository (never report it on SWE-bench questions)",
    )
    f.add_argument("--json", action="store_true", help="print the training summary as JSON")
    f.set_defaults(func=cmd_fit_dense)

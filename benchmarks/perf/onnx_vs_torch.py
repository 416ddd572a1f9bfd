"""ONNX Runtime (fp32 and int8) against PyTorch for the packaged MiniLM embedder:
throughput on the same texts in the same process, and agreement
(docs/stages.md#dense, retrieval_bench/index/onnx_backend.py).

Texts: the ``ast`` chunks of this project's own ``retrieval_bench/`` package (real
code, mixed lengths; the first ``--texts`` of them). Each backend is loaded and
warmed before its clock starts (the ONNX export, once per model into the temp
workspace, is timed apart); then each embeds all texts ``--repeats`` times,
interleaved (torch, onnx, onnx-int8, torch, …), and the median is kept:

    speed-up = backend texts/s / torch texts/s      (same texts, same process)
    agreement = cosine(backend vector, torch vector) per text: min, 1st percentile, mean

``--retrieval`` also runs ``rbench``'s dense retriever with each backend over the
swebench-lite-dev questions (``--retrieval-repo`` to take one repository's only:
all 22 snapshots are about an hour of CPU per backend on 2 cores; one stage per
backend, fresh workspace, so every chunk is embedded by each) and reports Acc@k /
MRR per backend and the Δ against torch (target: within ±1 point).

Usage: ``python benchmarks/perf/onnx_vs_torch.py [--texts 1000] [--repeats 3]
[--threads N] [--retrieval]`` writes ``benchmarks/perf/results/onnx_vs_torch.json``
and ``.md`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from perf_common import DATA_ROOT, write_result  # sibling module: the scripts run standalone

from retrieval_bench.harness.run.prepare import make_chunker
from retrieval_bench.index.embed import SentenceTransformerEmbedder, default_model_path
from retrieval_bench.index.onnx_backend import OnnxEmbedder

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "onnx_vs_torch.json"
SWEBENCH = DATA_ROOT / "swebench-lite-dev"
BACKENDS = ("torch", "onnx", "onnx-int8")


def _texts(n: int) -> list[str]:
    from retrieval_bench.files import iter_source_files

    chunker = make_chunker("ast", budget=512)
    out: list[str] = []
    for source in iter_source_files(ROOT / "retrieval_bench"):
        out += [c.text for c in chunker.chunk_file(source)]
        if len(out) >= n:
            break
    return out[:n]


def _throughput(args: argparse.Namespace, models: Path) -> dict[str, Any]:
    texts = _texts(args.texts)
    embedders: dict[str, Any] = {"torch": SentenceTransformerEmbedder(threads=args.threads)}
    export_s = 0.0
    for backend in BACKENDS[1:]:
        t0 = time.perf_counter()
        embedders[backend] = OnnxEmbedder(
            default_model_path(), models, backend=backend, name="all-MiniLM-L6-v2",
            threads=args.threads,
        )  # fmt: skip
        embedders[backend].embed(texts[:16])  # export (first only), load, warm
        export_s += time.perf_counter() - t0
    embedders["torch"].embed(texts[:16])
    seconds: dict[str, list[float]] = {b: [] for b in BACKENDS}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for backend in BACKENDS:
            t0 = time.perf_counter()
            vectors[backend] = embedders[backend].embed(texts)
            seconds[backend].append(time.perf_counter() - t0)
    median = {b: statistics.median(s) for b, s in seconds.items()}
    rate = {b: len(texts) / median[b] for b in BACKENDS}
    agreement = {}
    for backend in BACKENDS[1:]:
        cos = np.sum(vectors[backend] * vectors["torch"], axis=1)
        agreement[backend] = {
            "min": float(cos.min()),
            "p01": float(np.percentile(cos, 1)),
            "mean": float(cos.mean()),
        }
    return {
        "texts": len(texts),
        "mean_chars": statistics.fmean(len(t) for t in texts),
        "seconds": seconds,
        "texts_per_s": rate,
        "speedup_vs_torch": {b: rate[b] / rate["torch"] for b in BACKENDS},
        "cosine_vs_torch": agreement,
        "export_and_load_s": export_s,
    }


def _retrieval(tmp: Path, repos: list[str]) -> dict[str, Any]:
    """Dense with each backend over the swebench-lite-dev questions of ``repos`` (all
    when empty): every chunk of their snapshots embedded by each backend."""
    questions = tmp / "questions.jsonl"
    rows = [json.loads(x) for x in (SWEBENCH / "swebench-lite-dev.jsonl").read_text().splitlines()]
    rows = [
        {**r, "snapshot": str(SWEBENCH / r["snapshot"])}
        for r in rows
        if not repos or r["repo"] in repos
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    n_questions = len(rows)
    config = {
        "name": "onnx-vs-torch",
        "datasets": [{"name": "swebench-lite-dev", "questions": str(questions)}],
        "chunker": {"name": "ast", "budget": 512},
        "retrievers": [
            {"name": "dense", "id": f"dense-{b}", **({"backend": b} if b != "torch" else {})}
            for b in BACKENDS
        ],
        "candidates": 50,
        "metrics": {"ks": [1, 5, 10]},
        "baseline": {"stage": "dense-torch", "metric": "Acc@5"},
    }
    path = tmp / "config.json"
    path.write_text(json.dumps(config))
    ws = tmp / "ws"
    env = {**os.environ, "RBENCH_HOME": str(ws), "RBENCH_CACHE": str(ws / "cache")}
    cmd = [sys.executable, "-m", "retrieval_bench.cli", "run", str(path)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"rbench run failed: {proc.stderr[-2000:]}")
    run_dir = max((ws / "results").iterdir(), key=lambda p: p.stat().st_mtime)
    per_stage: dict[str, dict[str, list[float]]] = {}
    for line in (run_dir / "query_metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        per = per_stage.setdefault(row["stage"], {})
        for key in ("Acc@1", "Acc@5", "Acc@10", "MRR"):
            per.setdefault(key, []).append(float(row["metrics"][key]))
    table = {s: {k: statistics.fmean(v) for k, v in m.items()} for s, m in per_stage.items()}
    base = table["dense-torch"]
    delta = {s: {k: (v - base[k]) * 100 for k, v in m.items()} for s, m in table.items()}
    return {"seconds": seconds, "questions": n_questions, "repos": repos, "table": table,
            "delta_points_vs_torch": delta}  # fmt: skip


def _markdown(r: dict[str, Any]) -> str:
    lines = [
        "# onnx_vs_torch: all-MiniLM-L6-v2, ONNX Runtime against PyTorch",
        "",
        f"{r['machine']['cpus']} CPUs, load {r['machine']['load_average_1m']:.2f}; "
        f"threads {r['threads'] or 'default'}; {r['date']}.",
    ]
    t = r.get("throughput")
    if t:
        lines += [
            "",
            f"Throughput on {t['texts']} code chunks (mean {t['mean_chars']:.0f} chars), one "
            f"process, each backend warmed first, median of {len(t['seconds']['torch'])} "
            f"interleaved passes; ONNX export + load {t['export_and_load_s']:.1f} s (once).",
            "",
            "| backend | texts/s | × torch | cosine vs torch: min / p01 / mean |",
            "|---|---|---|---|",
        ]
        for b in BACKENDS:
            cos = t["cosine_vs_torch"].get(b)
            agree = f"{cos['min']:.5f} / {cos['p01']:.5f} / {cos['mean']:.6f}" if cos else "—"
            lines.append(
                f"| {b} | {t['texts_per_s'][b]:.1f} | {t['speedup_vs_torch'][b]:.2f} | {agree} |"
            )
    if r.get("retrieval"):
        ret = r["retrieval"]
        lines += [
            "",
            f"Dense retrieval on swebench-lite-dev ({ret['questions']} questions"
            f"{' of ' + ', '.join(ret['repos']) if ret['repos'] else ''}; {ret['seconds']:.0f} s "
            "for the three stages; Δ in points against torch, target within ±1):",
            "",
            "| stage | Acc@1 | Acc@5 | Acc@10 | MRR | ΔAcc@5 | ΔMRR |",
            "|---|---|---|---|---|---|---|",
        ]
        for s, m in ret["table"].items():
            d = ret["delta_points_vs_torch"][s]
            lines.append(
                f"| {s} | {m['Acc@1']:.3f} | {m['Acc@5']:.3f} | {m['Acc@10']:.3f} | "
                f"{m['MRR']:.3f} | {d['Acc@5']:+.1f} | {d['MRR']:+.1f} |"
            )
    lines.append("\nNo GPU in this session: the GPU figure is not measured.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--retrieval", action="store_true", help="also dense on swebench-lite-dev")
    parser.add_argument(
        "--retrieval-repo",
        action="append",
        default=[],
        help="only this repository's swebench-lite-dev questions (repeatable; default all 22:"
        " about an hour of CPU per backend pass on 2 cores)",
    )
    parser.add_argument("--no-throughput", action="store_true", help="only the retrieval part")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbench-onnx-") as tmp:
        result: dict[str, Any] = {"benchmark": "onnx_vs_torch", "threads": args.threads}
        if not args.no_throughput:
            result["throughput"] = _throughput(args, Path(tmp) / "models")
        if args.retrieval:
            result["retrieval"] = _retrieval(Path(tmp), args.retrieval_repo)
    write_result(args.out, result)
    md = _markdown(json.loads(args.out.read_text()))
    args.out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()

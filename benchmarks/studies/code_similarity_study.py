"""Cosine vs cross-similarity on real functions: the partial-matching problem
(docs/metrics.md#code-suggestion-similarity).

Builds (prediction, reference) pairs from real Python functions of
``fixtures/repos/shopapi`` — found with :mod:`ast`, each 6–40 lines — and
applies one transformation per case:

=====================  ===============================  ==============================
case                   prediction                       reference
=====================  ===============================  ==============================
identical              the function                     the function
continues_into_next    the function + the next one      the function      (seed case 1)
truncated_half         its first half of lines          the function      (seed case 2)
reference_padded       the function                     + logging/comments (seed case 3)
comments_removed       the function without comments    the function
renamed_variables      locals/args renamed v0, v1, ...  the function
unrelated              a function from another file     the function      (control)
=====================  ===============================  ==============================

The pairs are written to ``benchmarks/studies/data/code_similarity_pairs.jsonl``
(with the file and function they came from) so the numbers can be reproduced
without rebuilding; ``--rebuild`` regenerates them from the fixtures. Scores come
from the real all-MiniLM-L6-v2 (packaged; nothing downloaded) and the table
gives mean and min per case for ``cosine`` and ``cross_similarity`` (lines and
statements; with the default noise floor and with the raw formula, ``floor=None``).

Usage: ``python benchmarks/studies/code_similarity_study.py [--rebuild]``
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import keyword
import random
import re
import textwrap
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOT = ROOT / "fixtures" / "repos" / "shopapi" / "src"
DATA = Path(__file__).resolve().parent / "data" / "code_similarity_pairs.jsonl"
CASES = (
    "identical",
    "continues_into_next",
    "truncated_half",
    "reference_padded",
    "comments_removed",
    "renamed_variables",
    "unrelated",
)
MIN_LINES, MAX_LINES = 6, 40


def collect_functions(root: Path) -> list[dict[str, str]]:
    """Top-level functions and methods of every ``.py`` file under ``root``, dedented, in order."""
    found: list[dict[str, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            nodes += [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        nodes.sort(key=lambda n: n.lineno)
        for node in nodes:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            assert node.end_lineno is not None
            body = textwrap.dedent("\n".join(lines[first : node.end_lineno]))
            found.append(
                {"path": path.relative_to(ROOT).as_posix(), "name": node.name, "code": body}
            )
    return found


def strip_comments(code: str) -> str:
    """``code`` without comments (comment-only lines dropped, trailing comments cut)."""
    cut: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            cut[tok.start[0]] = tok.start[1]
    out = []
    for number, line in enumerate(code.splitlines(), start=1):
        if number in cut:
            kept = line[: cut[number]].rstrip()
            if not kept.strip():
                continue
            line = kept
        out.append(line)
    return "\n".join(out)


_SIMPLE_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def pad_with_logging(code: str) -> str:
    """Insert a comment before and a ``log.debug`` after each single-line ``name = ...``
    assignment, and a log line before each ``return``: the padding of seed case 3."""
    out = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        m = _SIMPLE_ASSIGN.match(line)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        one_line = m is not None and not line.rstrip().endswith(("(", "[", "{", ",", "\\"))
        one_line = one_line and (len(nxt) - len(nxt.lstrip()) <= len(line) - len(line.lstrip()))
        if line.strip().startswith("return"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f'{indent}log.debug("returning from here")')
        if m is not None and one_line:
            indent, name = m.group(1), m.group(2)
            out.append(f"{indent}# work out {name.replace('_', ' ')}")
            out.append(line)
            out.append(f'{indent}log.debug("{name} = %r", {name})')
        else:
            out.append(line)
    return "\n".join(out)


def rename_locals(code: str) -> str:
    """Rename the function's parameters and assigned local names to ``v0``, ``v1``, ...
    (attribute names after a dot are left alone)."""
    tree = ast.parse(code)
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
    names: list[str] = [a.arg for a in func.args.args + func.args.kwonlyargs if a.arg != "self"]
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    mapping = {n: f"v{i}" for i, n in enumerate(dict.fromkeys(names)) if not keyword.iskeyword(n)}
    lines = code.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    prev: tokenize.TokenInfo | None = None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        after_dot = prev is not None and prev.string == "."
        if tok.type == tokenize.NAME and tok.string in mapping and not after_dot:
            edits.append((tok.start[0] - 1, tok.start[1], tok.end[1], mapping[tok.string]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok
    for row, start, end, new in sorted(edits, reverse=True):
        lines[row] = lines[row][:start] + new + lines[row][end:]
    return "".join(lines)


def truncate_half(code: str) -> str:
    """The first half (rounded up) of the non-blank lines."""
    lines = [line for line in code.splitlines() if line.strip()]
    return "\n".join(lines[: (len(lines) + 1) // 2])


def build_pairs(seed: int = 0) -> list[dict[str, str]]:
    """Every case for every eligible function (see the module docstring)."""
    functions = collect_functions(SOURCE_ROOT)
    rng = random.Random(seed)
    pairs: list[dict[str, str]] = []
    for i, fn in enumerate(functions):
        code = fn["code"]
        n_lines = sum(1 for line in code.splitlines() if line.strip())
        if not MIN_LINES <= n_lines <= MAX_LINES:
            continue
        nxt = functions[i + 1] if i + 1 < len(functions) else functions[0]
        others = [f for f in functions if f["path"] != fn["path"]]
        other = rng.choice(others)
        where = f"{fn['path']}::{fn['name']}"
        made = {
            "identical": (code, code),
            "continues_into_next": (code + "\n\n" + nxt["code"], code),
            "truncated_half": (truncate_half(code), code),
            "reference_padded": (code, pad_with_logging(code)),
            "comments_removed": (strip_comments(code), code),
            "renamed_variables": (rename_locals(code), code),
            "unrelated": (other["code"], code),
        }
        for case, (prediction, reference) in made.items():
            if case != "identical" and prediction == reference:
                continue  # e.g. no comments to remove: not a pair of this case
            pairs.append(
                {"case": case, "source": where, "prediction": prediction, "reference": reference}
            )
    return pairs


def load_pairs(rebuild: bool) -> list[dict[str, str]]:
    if rebuild or not DATA.exists():
        pairs = build_pairs()
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
        return pairs
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


def summarise(pairs: list[dict[str, str]], columns: dict[str, list[float | None]]) -> str:
    """Markdown table: per case, the pair count and each metric's mean (min) over its pairs."""
    rows = [
        "| case | pairs | " + " | ".join(columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for case in CASES:
        idx = [i for i, p in enumerate(pairs) if p["case"] == case]
        if not idx:
            continue
        cells = [case, str(len(idx))]
        for values in columns.values():
            vs = [v for i in idx if (v := values[i]) is not None]
            cells.append(f"{sum(vs) / len(vs):.3f} ({min(vs):.3f})" if vs else "-")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rebuild", action="store_true", help="regenerate the pairs file")
    args = parser.parse_args()

    from retrieval_bench.contracts.answer_metric import Sample
    from retrieval_bench.index.embed import default_embedder
    from retrieval_bench.metrics.answer.code_similarity import CosineSimilarity, CrossSimilarity

    pairs = load_pairs(args.rebuild)
    samples = [
        Sample(p["prediction"], (p["reference"],), id=p["source"], meta={"language": "python"})
        for p in pairs
    ]
    embedder = default_embedder()  # packaged MiniLM behind the on-disk cache: reruns are quick
    metrics: dict[str, Any] = {
        "cosine": CosineSimilarity(embedder=embedder),
        "cross lines": CrossSimilarity(by="lines", embedder=embedder),
        "cross statements": CrossSimilarity(by="statements", embedder=embedder),
        "cross lines, raw formula (floor=None)": CrossSimilarity(floor=None, embedder=embedder),
        "cross statements, raw formula": CrossSimilarity(
            by="statements", floor=None, embedder=embedder
        ),
    }
    columns = {name: [s.value for s in m.score_samples(samples)] for name, m in metrics.items()}
    n_functions = len({p["source"] for p in pairs})
    print(
        f"{len(pairs)} pairs from {n_functions} functions of "
        f"{SOURCE_ROOT.relative_to(ROOT)}; all-MiniLM-L6-v2; cell = mean (min); "
        "cross = cross_similarity, floor 0.5 and clip unless said\n"
    )
    print(summarise(pairs, columns))


if __name__ == "__main__":
    main()

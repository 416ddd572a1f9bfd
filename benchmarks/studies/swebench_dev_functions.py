"""Gold functions and modules of the swebench-lite-dev questions, recovered from the
bundled `.py`-only git histories (docs/metrics.md#function-and-module-level).

The dev questions carry gold files but not the fix's patch. Each question id
``owner__repo-N`` names the pull request ``#N`` that fixed it; its squash commit
(subject ending ``(#N)``) or merge commit (``Merge pull request #N``) is found in
``$RBENCH_DATA_ROOT/repos/<repo>.bundle``, and its diff against its first parent
is the patch. Entities are derived on that parent's files
(:func:`retrieval_bench.datasets.gold_functions.entities_in`) and kept only
when the question's own snapshot (the SWE-bench base commit) defines them:
the PR may have branched from another commit than its parent here. Only the
question's gold files count (SWE-bench's gold is the fix's non-test patch; the
commit here holds its test changes too).

Usage::

    python benchmarks/studies/swebench_dev_functions.py [--out PATH]

Writes one row per question: ``{id, gold_functions, gold_modules,
gold_functions_locagent, fix_commit, fix_subject, dropped}`` (``dropped``: entities
the base snapshot lacks; ``gold_functions_locagent``: LocAgent's rules,
docs/metrics.md#conventions, kept by the same test), and
prints how many questions got gold functions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path

from retrieval_bench.datasets.gold_functions import (
    at_commit,
    definitions,
    entities_in,
    file_changes,
    modules_of,
)
from retrieval_bench.datasets.gold_locagent import locagent_in, structure

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "data" / "swebench-lite-dev.functions.jsonl"
DATA_ROOT = Path(os.environ.get("RBENCH_DATA_ROOT") or ROOT.parent / "shared" / "data")
BUNDLES = {
    "sqlfluff/sqlfluff": "sqlfluff",
    "pvlib/pvlib-python": "pvlib",
    "pylint-dev/astroid": "astroid",
    "pydicom/pydicom": "pydicom",
    "marshmallow-code/marshmallow": "marshmallow",
}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


def bundle_clone(repo: str, clones: dict[str, Path], tmp: Path) -> Path:
    """A bare clone of ``repo``'s bundle under ``tmp``, made on first use (``clones``)."""
    name = BUNDLES[repo]
    if name not in clones:
        clones[name] = tmp / f"{name}.git"
        bundle = DATA_ROOT / "repos" / f"{name}.bundle"
        subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(clones[name])], check=True)
    return clones[name]


def fix_commit(repo: Path, pr: str) -> tuple[str, str] | None:
    """(sha, subject) of the squash or merge commit of pull request ``pr``."""
    squash = re.compile(rf"\(#{pr}\)\s*$")
    merge = re.compile(rf"^Merge pull request #{pr}\b")
    for line in git(repo, "log", "--all", "--format=%H %s").splitlines():
        sha, _, subject = line.partition(" ")
        if squash.search(subject) or merge.search(subject):
            return sha, subject
    return None


def snapshot_files(tarball: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".py") and (f := tar.extractfile(member)):
                files[member.name.split("/", 1)[1]] = f.read().decode("utf-8", "replace")
    return files


def _locagent_has(base: dict[str, str], entity: str) -> bool:
    """Whether the question's snapshot defines ``entity`` as LocAgent reads a file."""
    path, _, name = entity.rpartition(":")
    found = structure(base[path]) if path in base else None
    return found is not None and found.has(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = DATA_ROOT / "swebench-lite-dev"
    rows = [json.loads(x) for x in (data / "swebench-lite-dev.jsonl").read_text().splitlines()]
    out_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        clones: dict[str, Path] = {}
        for row in rows:
            repo, pr = bundle_clone(row["repo"], clones, Path(tmp)), row["id"].rsplit("-", 1)[1]
            found = fix_commit(repo, pr)
            result = {"id": row["id"], "gold_functions": [], "gold_modules": [],
                      "gold_functions_locagent": [], "fix_commit": None, "fix_subject": None,
                      "dropped": []}  # fmt: skip
            if found is not None:
                sha, subject = found
                parent = git(repo, "rev-parse", f"{sha}^1").strip()
                patch = git(repo, "diff", parent, sha, "--", "*.py")

                changes = file_changes(patch, at_commit(repo, parent))  # one read per file
                functions = entities_in(changes)
                base = snapshot_files(data / row["snapshot"])
                defined = {f"{p}:{d.name}" for p in {f.rpartition(":")[0] for f in functions}
                           if p in base for d in definitions(base[p])}  # fmt: skip
                gold_files = set(
                    json.loads(row["gold_files"].replace("'", '"'))
                    if isinstance(row["gold_files"], str)
                    else row["gold_files"]
                )
                functions = [f for f in functions if f.rpartition(":")[0] in gold_files]
                kept = [f for f in functions if f in defined]
                by_locagent = [
                    f for f in locagent_in(changes)
                    if f.rpartition(":")[0] in gold_files and _locagent_has(base, f)
                ]  # fmt: skip
                result.update(gold_functions=kept, gold_modules=sorted(modules_of(kept)),
                              gold_functions_locagent=by_locagent,
                              fix_commit=sha, fix_subject=subject,
                              dropped=[f for f in functions if f not in defined])  # fmt: skip
            out_rows.append(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in out_rows))
    with_gold = sum(1 for r in out_rows if r["gold_functions"])
    by_locagent = sum(1 for r in out_rows if r["gold_functions_locagent"])
    print(f"{with_gold} of {len(out_rows)} questions have gold functions ({by_locagent} by "
          f"LocAgent's rules) -> {args.out}")  # fmt: skip
    for r in out_rows:
        print(f"  {r['id']}: {len(r['gold_functions'])} functions, {len(r['dropped'])} dropped,"
              f" fix {r['fix_subject']!r}")  # fmt: skip


if __name__ == "__main__":
    main()

"""The swebench-lite-dev questions as commits of the bundled `.py`-only histories, so
that stages reading a repository's past (``history``, docs/stages.md#history) can
run on them (docs/datasets.md#swebench-lite-dev-as-commits).

The questions' snapshots are tarballs of every ``.py`` file at the upstream
``base_commit``; the bundled histories of their repositories keep only the ``.py``
files, so their commit ids differ from upstream's. A question's commit here is
the commit whose tree holds exactly the tarball's files (path and git blob id of
each): searched on the first-parent line before the parent of the question's fix
(``fix_commit`` of ``benchmarks/data/swebench-lite-dev.functions.jsonl``), so it
can never hold the fix; for a question whose fix is not found there, on the line
before the question's ``created_at`` (an equal tree is the base state either way).
Where no tree is equal (the pull request branched from a commit off the main line),
the nearest one by files that differ is taken and the difference recorded.

Usage::

    python benchmarks/studies/swebench_dev_commits.py [--out PATH] [--depth N]

Writes the questions file ``benchmarks/data/swebench-lite-dev.commits.jsonl``: each
row the question's ``id, repo, query, gold_files, split, created_at, version``,
``commit`` (the bundled history's commit), ``upstream_base_commit``,
``tree_diff`` (files that differ: 0 for an exact match) and ``fix_commit``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tarfile
import tempfile
from pathlib import Path

# the sibling study that found each question's fix (run as a script, its folder is on
# sys.path): the same bundle clones, data root and git call
from swebench_dev_functions import DATA_ROOT, ROOT, bundle_clone, git

OUT = ROOT / "benchmarks" / "data" / "swebench-lite-dev.commits.jsonl"
FUNCTIONS = ROOT / "benchmarks" / "data" / "swebench-lite-dev.functions.jsonl"


def blob_id(data: bytes) -> str:
    """Git's blob id of ``data``: sha1 of ``blob <size>\\0`` + the bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's id)


def tarball_tree(tarball: Path) -> dict[str, str]:
    """Path -> blob id of every ``.py`` file of a snapshot tarball (its top folder cut)."""
    tree: dict[str, str] = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".py") and (f := tar.extractfile(member)):
                tree[member.name.split("/", 1)[1]] = blob_id(f.read())
    return tree


def commit_tree(repo: Path, commit: str) -> dict[str, str]:
    """Path -> blob id of every ``.py`` file of ``commit``."""
    tree: dict[str, str] = {}
    for line in git(repo, "ls-tree", "-r", commit).splitlines():
        meta, _, path = line.partition("\t")
        if path.endswith(".py"):
            tree[path] = meta.split()[2]
    return tree


def difference(a: dict[str, str], b: dict[str, str]) -> int:
    """Files present in one tree only or with other contents."""
    return sum(1 for p in a.keys() | b.keys() if a.get(p) != b.get(p))


def nearest_commit(
    repo: Path, line: list[str], wanted: dict[str, str], depth: int
) -> tuple[str, int]:
    """The commit of the first-parent line ``git rev-list --first-parent <line>`` (at most
    ``depth`` of it) whose tree is nearest to ``wanted``."""
    best: tuple[str, int] | None = None
    for sha in git(repo, "rev-list", "--first-parent", f"-n{depth}", *line).split():
        diff = difference(commit_tree(repo, sha), wanted)
        if best is None or diff < best[1]:
            best = (sha, diff)
        if diff == 0:
            break
    if best is None:
        raise SystemExit(f"no commit on {line}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--depth", type=int, default=400, help="commits searched back from the fix")
    args = parser.parse_args()
    data = DATA_ROOT / "swebench-lite-dev"
    rows = [json.loads(x) for x in (data / "swebench-lite-dev.jsonl").read_text().splitlines()]
    fixes = {r["id"]: r["fix_commit"] for r in map(json.loads, FUNCTIONS.read_text().splitlines())}
    out_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        clones: dict[str, Path] = {}
        for row in rows:
            repo = bundle_clone(row["repo"], clones, Path(tmp))
            # before the fix's parent; with no fix found, the line before the question's date
            fix = fixes.get(row["id"])
            line = [f"{fix}^1"] if fix else [f"--before={row['created_at']}", "HEAD"]
            sha, diff = nearest_commit(repo, line, tarball_tree(data / row["snapshot"]),
                                       args.depth)  # fmt: skip
            kept = {k: row[k] for k in ("id", "repo", "query", "gold_files", "split",
                                         "created_at", "version") if k in row}  # fmt: skip
            out_rows.append({**kept, "commit": sha, "upstream_base_commit": row["base_commit"],
                             "tree_diff": diff, "fix_commit": fix})  # fmt: skip
            print(f"  {row['id']}: {sha[:12]} ({diff} files differ)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in out_rows))
    exact = sum(1 for r in out_rows if r["tree_diff"] == 0)
    print(f"{len(out_rows)} of {len(rows)} questions mapped, {exact} exactly -> {args.out}")


if __name__ == "__main__":
    main()

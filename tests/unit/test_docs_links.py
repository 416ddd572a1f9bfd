"""Documentation pointers: code and docs point only at pages that ship, and they resolve.

1. No citation of documents outside the repository (an internal specification's
   numbered sections, numbered design notes, the ARCHITECTURE and DEPENDENCIES
   notes; the patterns are in :data:`FORBIDDEN`) may come back in the package,
   tests, benchmarks, examples, the README or docs/: a reader cannot follow them.
   Point to ``docs/<page>.md#<heading-anchor>`` instead. Section signs of papers
   and books ("Lin 2004, §3") are fine.
2. Every ``docs/<page>.md#<anchor>`` pointer in those files, and every relative
   Markdown link of the README and docs/, names an existing page and heading
   (GitHub anchors: lowercase, punctuation dropped, spaces → ``-``, repeated
   headings suffixed ``-1``, ``-2`` …).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = ("retrieval_bench", "tests", "benchmarks", "examples", "docs")
TOP_FILES = ("README.md", "Makefile", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".txt", ".md", ".yaml", ".yml", ".toml", ".cfg", ".sh", ".html", ".js"}
SKIPPED_PARTS = {"__pycache__", ".venv", "node_modules", ".git"}

# Design-note numbers in any case; the two note names in capitals only ("architecture"
# is a word).
FORBIDDEN = re.compile(
    r"\bSPEC\s*§|\bSPEC/|(?i:\bseed\s+00\d)|\b(?:ARCHITECTURE|DEPENDENCIES)(?:\.md)?\b"
)

POINTER = re.compile(r"(?<![\w/.-])docs/([\w-]+\.md)#([\w-]+)")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def text_files() -> Iterator[Path]:
    for name in TOP_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if SKIPPED_PARTS.intersection(path.parts) or not path.is_file():
                continue
            if path.suffix in TEXT_SUFFIXES:
                yield path


def forbidden_citations(text: str) -> list[str]:
    """The internal-document citations in ``text`` (see the module docstring)."""
    return [m.group(0) for m in FORBIDDEN.finditer(text)]


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading's text (without the numeric suffix)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown page (headings in code fences skipped)."""
    seen: dict[str, int] = {}
    out = set()
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        m = None if inside else HEADING.match(line)
        if m:
            base = github_anchor(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(f"{base}-{n}" if n else base)
    return frozenset(out)


def broken_target(source: Path, page: Path, anchor: str) -> str | None:
    """Why ``page#anchor`` (as cited from ``source``) does not resolve; None when it does."""
    if not page.is_file():
        return f"{source.relative_to(ROOT)}: no page {page.relative_to(ROOT)}"
    if anchor and page.suffix == ".md" and anchor not in anchors(page):
        return f"{source.relative_to(ROOT)}: no heading #{anchor} in {page.relative_to(ROOT)}"
    return None


def test_github_anchor_rules() -> None:
    assert github_anchor("File level (every example)") == "file-level-every-example"
    assert github_anchor("Chunk level (examples with `gold_spans`)") == (
        "chunk-level-examples-with-gold_spans"
    )
    assert github_anchor("LLM-as-judge") == "llm-as-judge"
    assert github_anchor("answer_metrics") == "answer_metrics"


def test_forbidden_citations_are_recognised() -> None:
    # Built from pieces, so that a plain grep for the citations finds nothing here.
    spec, seed = "SPEC " + "§", "seed " + "002"
    deps, arch = "DEPENDENCIES" + ".md", "ARCHI" + "TECTURE"
    assert forbidden_citations(f"({spec}1.3; {seed})") == [spec, seed]
    assert forbidden_citations(f"{seed.title()}'s cure; see {deps}") == [seed.title(), deps]
    assert forbidden_citations(f"{arch} ``LLM``") == [arch]
    assert forbidden_citations("Lin 2004, §3; the architecture page; seed 0; seeded") == []


def test_no_citations_of_documents_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    found = []
    for path in text_files():
        if path.resolve() == here:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            for hit in forbidden_citations(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {hit!r}")
    assert not found, "point to docs/<page>.md#<anchor> instead:\n" + "\n".join(found)


def test_docs_pointers_resolve() -> None:
    broken = []
    for path in text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for page, anchor in POINTER.findall(text):
            why = broken_target(path, DOCS / page, anchor)
            if why:
                broken.append(why)
    assert not broken, "\n".join(sorted(set(broken)))


def test_markdown_links_of_the_readme_and_docs_resolve() -> None:
    broken = []
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    for source in pages:
        inside = False
        for line in source.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                inside = not inside
            if inside:
                continue
            for target in MD_LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, mailto: ...
                    continue
                file_part, _, anchor = target.partition("#")
                page = (source.parent / file_part).resolve() if file_part else source
                why = broken_target(source, page, anchor)
                if why:
                    broken.append(why)
    assert not broken, "\n".join(sorted(set(broken)))

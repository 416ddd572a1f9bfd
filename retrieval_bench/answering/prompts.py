"""Answer prompts: the four rungs, the context block and the file tree.

The ladder this module builds (docs/stages.md#answerer):

- ``bare`` (naive): the snippets and the question, nothing else;
- ``instructions`` (basic): "reply to the query using the information given to
  you, cite the specific files and code snippets, and do not discuss anything
  that was not shown to you";
- ``where_to_look`` (better): plus "if there is not enough information to
  answer, suggest where the user could look to learn more";
- ``file_tree`` (future): plus a file tree of the nearest common ancestor
  folder of the files the snippets come from.

The prompt texts live in ``prompts/<rung>.txt`` beside this module (package
data), in ``[system]``/``[user]`` sections like the reranker prompts.

Context. Each chunk is shown as a ``path:start-end`` header and a code fence
(longer than any backtick run inside the chunk). The chunks go in rank order
while their blocks fit ``max_tokens`` of the project tokenizer
(:mod:`retrieval_bench.chunking.tokenizer`, the one that counted the corpus'
chunks); the lower-ranked chunks that do not fit are dropped. When even the
best chunk alone is too large, it is cut to the budget (at a line break where
one is near) so the answer never goes without context.

File tree. The ancestor is the deepest folder holding every shown chunk's
file; its files (from the corpus' file list) are drawn with the compact
renderer the HyDE ``tree`` rung uses
(:func:`retrieval_bench.retrieval.hyde.file_tree`: large folders collapsed to
``name/ (N files)``), within ``max_chars`` and ``max_lines``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from retrieval_bench.chunking.tokenizer import Tokenizer
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.prompt_files import read_sections
from retrieval_bench.types import Chunk

__all__ = [
    "RUNGS",
    "Context",
    "ContextBlock",
    "build_context",
    "common_ancestor",
    "format_chunk",
    "load_answer_prompt",
    "render_prompt",
    "tree_of",
]

RUNGS = ("bare", "instructions", "where_to_look", "file_tree")
"""The answer-prompt ladder, naive to better (one prompt file each)."""

PROMPTS_PACKAGE = "retrieval_bench.answering"
NO_CONTEXT = "(no code snippets were retrieved for this question)"
_BACKTICKS = re.compile(r"`{3,}")
_FENCE_LANGUAGE = re.compile(r"^[a-z0-9_+-]+$")


def _check_rung(rung: str) -> None:
    if rung not in RUNGS:
        raise ConfigError(f"answerer: unknown rung {rung!r}; choose one of: {', '.join(RUNGS)}")


def load_answer_prompt(rung: str) -> dict[str, str]:
    """Sections of ``prompts/<rung>.txt``: ``{"user": ...}`` and, except for
    ``bare``, ``"system"``.

    A section starts with a line ``[name]``; lines before the first section are
    comments (:mod:`retrieval_bench.llm.prompt_files`).
    """
    _check_rung(rung)
    return read_sections(PROMPTS_PACKAGE, rung)


# -- context -------------------------------------------------------------------------
def _fence(text: str) -> str:
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    return "`" * max(3, longest + 1)


def format_chunk(chunk: Chunk, text: str | None = None) -> str:
    """``path:start-end`` and the chunk's text (or ``text``) in a code fence."""
    body = chunk.text if text is None else text
    fence = _fence(body)
    language = chunk.language.lower()
    tag = language if language != "text" and _FENCE_LANGUAGE.match(language) else ""
    return f"{chunk.path}:{chunk.start_line}-{chunk.end_line}\n{fence}{tag}\n{body}\n{fence}"


@dataclass(frozen=True)
class ContextBlock:
    """One chunk as shown to the model."""

    chunk: Chunk
    text: str
    tokens: int
    truncated: bool = False


@dataclass(frozen=True)
class Context:
    """The snippets of one prompt: what was shown, what was dropped, its size."""

    blocks: tuple[ContextBlock, ...]
    dropped: tuple[Chunk, ...]
    """Lower-ranked chunks left out because they did not fit the budget."""

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def chunks(self) -> list[Chunk]:
        return [b.chunk for b in self.blocks]

    @property
    def text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks) if self.blocks else NO_CONTEXT


def _cut_to_budget(chunk: Chunk, tokenizer: Tokenizer, max_tokens: int) -> ContextBlock:
    """The chunk's block cut so that it fits ``max_tokens`` (header and fences kept)."""
    frame = tokenizer.count(format_chunk(chunk, "..."))
    room = max_tokens - frame
    offsets = tokenizer.offsets(chunk.text)
    end = offsets[room - 1][1] if 0 < room <= len(offsets) else 0
    head = chunk.text[:end]
    newline = head.rfind("\n")
    if newline > len(head) // 2:
        head = head[:newline]
    text = format_chunk(chunk, f"{head}\n..." if head else "...")
    return ContextBlock(chunk, text, tokenizer.count(text), truncated=True)


def build_context(chunks: Sequence[Chunk], tokenizer: Tokenizer, max_tokens: int) -> Context:
    """Blocks of ``chunks`` (best first) while they fit ``max_tokens``; see the module doc."""
    if max_tokens < 1:
        raise ValueError(f"max_context_tokens must be a positive integer, not {max_tokens}")
    texts = [format_chunk(c) for c in chunks]
    counts = tokenizer.count_batch(texts)
    blocks: list[ContextBlock] = []
    used = 0
    for chunk, text, n in zip(chunks, texts, counts, strict=True):
        if used + n > max_tokens:
            break
        blocks.append(ContextBlock(chunk, text, n))
        used += n
    if not blocks and chunks:
        blocks.append(_cut_to_budget(chunks[0], tokenizer, max_tokens))
    return Context(tuple(blocks), tuple(chunks[len(blocks) :]))


# -- file tree -----------------------------------------------------------------------
def common_ancestor(paths: Iterable[str]) -> str:
    """The deepest folder holding every path ("" for the repository root or no paths)."""
    folders = [posixpath.dirname(p.strip("/")) for p in paths]
    if not folders:
        return ""
    return posixpath.commonpath(folders) if all(folders) else ""


def tree_of(
    paths: Iterable[str], files: Iterable[str], *, max_lines: int = 40, max_chars: int = 1500
) -> tuple[str, str]:
    """(ancestor label, tree) for the common ancestor of ``paths`` over ``files``.

    The label is the ancestor folder ("." for the repository root); the tree
    lists ``files`` under it, relative to it, in at most ``max_lines`` lines and
    ``max_chars`` characters (the character cap is lowered until the line cap
    holds; a last resort cuts lines and ends with "…").
    """
    from retrieval_bench.retrieval.hyde import file_tree  # heavy imports: only for this rung

    root = common_ancestor(paths)
    prefix = f"{root}/" if root else ""
    below = sorted({f[len(prefix) :] for f in files if f.startswith(prefix)})
    label = root or "."
    if not below or max_lines < 1:
        return label, "(no files)"
    chars = max_chars
    tree = file_tree(below, chars)
    for _ in range(12):
        if tree.count("\n") + 1 <= max_lines:
            return label, tree
        chars = int(chars * 0.8)
        tree = file_tree(below, chars)
    lines = tree.splitlines()
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], "…"]
    return label, "\n".join(lines)


# -- the prompt ----------------------------------------------------------------------
def render_prompt(
    rung: str,
    question: str,
    context: str,
    *,
    tree_root: str = ".",
    tree: str = "",
) -> tuple[str | None, str]:
    """(system, user) of ``rung`` filled with the question, the context text and,
    for ``file_tree``, the tree (the other rungs ignore it)."""
    prompt = load_answer_prompt(rung)
    fields = {"question": question, "context": context, "tree_root": tree_root, "tree": tree}
    return prompt.get("system"), prompt["user"].format_map(fields)

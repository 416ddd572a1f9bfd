"""``hyde``: embed an LLM-written hypothetical snippet instead of the question.

Hypothetical Document Embeddings (Gao, Ma, Lin and Callan 2022, "Precise
Zero-Shot Dense Retrieval without Relevance Labels"): a question and the code
that answers it are different kinds of text and may sit apart in the
embedding space, so a language model first writes a *fake* answer document,
and that document is embedded and searched against the real chunks. The rungs
(docs/stages.md#hyde), selected with ``rung=``:

* ``"plain"``: ask for a hypothetical code snippet answering the question;
* ``"language"``: the same, naming the repository's dominant language(s),
  computed from the corpus chunks' ``language`` field (e.g. "TypeScript/TSX");
* ``"tree"``: additionally show a compact file tree of the repository, so the
  model can guess the framework (seeing ``main.tsx`` and a ``components/``
  folder, write React). The tree is capped at ``tree_chars``
  characters (default 900) so that, with a question of normal length, the
  prompt stays under ~1500 characters for a 2k-context local model; it comes
  first in the prompt, so every question shares the same prompt prefix.

All questions go to the model in one :meth:`LLM.chat_many` batch. Code
fences are stripped from each reply; the snippet (by default preceded by the
question, ``include_query=True``) goes through the same embedder as the
chunks and a composed :class:`~retrieval_bench.retrieval.dense.DenseRetriever`
searches with it. Per query, :attr:`HydeRetriever.artifacts` records the
snippet and the rung (stored with the run). When the model call fails or the
reply is empty, the failure is recorded in :attr:`HydeRetriever.failures` and
the raw question is embedded instead, so the query still gets results; an
empty question is a failure with no results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_bench.chunking.languages import language_for_path
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import Embedder
from retrieval_bench.llm.base import LLM, Completion, chat_request
from retrieval_bench.llm.prompt_files import read_prompt_text
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.types import Chunk, Run

if TYPE_CHECKING:  # LanceDB's index module: imported only by runs that build one
    from retrieval_bench.index.store import CodebaseIndex

RUNGS = ("plain", "language", "tree")
PROMPTS_PACKAGE = "retrieval_bench.retrieval"
"""Where ``prompts/hyde_<rung>.txt`` live (package data)."""

_DISPLAY = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "tsx": "TypeScript",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
    "c": "C",
    "cpp": "C++",
    "ruby": "Ruby",
    "kotlin": "Kotlin",
    "swift": "Swift",
    "sql": "SQL",
    "shell": "Shell",
}
"""Languages that count as code, by chunk label → display name (tsx joins TypeScript)."""

UNKNOWN_LANGUAGES = "the language the file names suggest"


def dominant_languages(
    chunks: Iterable[Chunk], max_languages: int = 2, min_share_of_top: float = 1 / 3
) -> list[str]:
    """Display names of the repository's main programming languages, most used first.

    Each chunk weighs its number of lines; markup, data and prose (Markdown,
    JSON, YAML, HTML, CSS, Makefiles, plain text) do not count. A chunk with no
    ``language`` label is labelled from its path. Languages at least
    ``min_share_of_top`` as large as the top one are kept, at most
    ``max_languages``. TypeScript with ``.tsx`` files is named "TypeScript/TSX".
    """
    weight: Counter[str] = Counter()
    has_tsx = False
    for chunk in chunks:
        label = chunk.language or language_for_path(chunk.path)
        name = _DISPLAY.get(label)
        if name is None:
            continue
        has_tsx = has_tsx or label == "tsx"
        weight[name] += max(1, chunk.text.count("\n") + 1)
    if not weight:
        return []
    ranked = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][1]
    keep = [name for name, w in ranked if w >= min_share_of_top * top][:max_languages]
    return [f"{n}/TSX" if n == "TypeScript" and has_tsx else n for n in keep]


@dataclass
class _Folder:
    files: list[str] = field(default_factory=list)
    folders: dict[str, _Folder] = field(default_factory=dict)
    total: int = 0


def _folder_tree(paths: Iterable[str]) -> _Folder:
    root = _Folder()
    for path in sorted(set(paths)):
        parts = [p for p in path.split("/") if p]
        if not parts:
            continue
        node = root
        node.total += 1
        for part in parts[:-1]:
            node = node.folders.setdefault(part, _Folder())
            node.total += 1
        node.files.append(parts[-1])
    return root


def _render(node: _Folder, depth: int, max_depth: int, entries: tuple[int, int]) -> list[str]:
    """Lines of ``node`` at ``depth``; ``entries``: (at the root, below) per folder."""
    pad = "  " * depth
    limit = entries[0] if depth == 0 else entries[1]
    files = sorted(node.files, key=lambda f: (f.startswith("."), f))  # dotfiles last
    lines = [pad + name for name in files[:limit]]
    if len(files) > limit:
        lines.append(f"{pad}… (+{len(files) - limit} more files)")
    names = sorted(node.folders)
    for name in names[:limit]:
        sub = node.folders[name]
        label = name
        while not sub.files and len(sub.folders) == 1:  # src/main/java/... on one line
            (only,) = sub.folders
            label, sub = f"{label}/{only}", sub.folders[only]
        if not sub.folders and len(sub.files) == 1:
            lines.append(f"{pad}{label}/{sub.files[0]}")
        elif depth + 1 >= max_depth:
            lines.append(f"{pad}{label}/ ({sub.total} {'file' if sub.total == 1 else 'files'})")
        else:
            lines.append(f"{pad}{label}/")
            lines.extend(_render(sub, depth + 1, max_depth, entries))
    if len(names) > limit:
        lines.append(f"{pad}… (+{len(names) - limit} more folders)")
    return lines


def _shown(lines: list[str], max_depth: int) -> tuple[int, ...]:
    """Entries shown per level (root first; "… more" lines do not count)."""
    counts = [0] * max_depth
    for line in lines:
        level = (len(line) - len(line.lstrip())) // 2
        if not line.lstrip().startswith("…") and level < max_depth:
            counts[level] += 1
    return tuple(counts)


def file_tree(paths: Iterable[str], max_chars: int = 900, max_depth: int = 4) -> str:
    """A compact, indented file tree of ``paths`` in at most ``max_chars`` characters.

    Files are listed before folders (dotfiles last), two spaces per level;
    single-folder chains are joined (``src/main/java/``) and a folder holding
    one file is one line. Trees down to ``max_depth`` levels with various
    numbers of entries per folder are tried, deeper folders collapsed to
    ``name/ (N files)``, and among those that fit the one showing the most
    root entries is kept, then the most entries one level down, and so on
    (breadth near the root tells most about a repository). When none fits,
    the smallest is cut at a line boundary with a final ``…``.
    """
    root = _folder_tree(paths)
    if root.total == 0 or max_chars <= 0:
        return ""
    max_depth = max(1, max_depth)
    best: tuple[tuple[int, ...], list[str]] | None = None
    lines: list[str] = []
    for top in (20, 12, 8, 5, 3):
        for inner in (t for t in (12, 8, 5, 3) if t <= top):
            for depth in range(max_depth, 0, -1):
                lines = _render(root, 0, depth, (top, inner))
                if sum(len(x) + 1 for x in lines) - 1 <= max_chars:
                    score = _shown(lines, max_depth)
                    if best is None or score > best[0]:
                        best = (score, lines)
    if best is not None:
        return "\n".join(best[1])
    out: list[str] = []
    for line in lines:
        if sum(len(x) + 1 for x in out) + len(line) + 2 > max_chars:
            break
        out.append(line)
    return "\n".join([*out, "…"])[:max_chars]


def strip_code_fences(text: str) -> str:
    """The code inside Markdown fences (``` or ~~~) of a reply, blocks joined by a blank
    line; an unterminated fence (a reply cut by ``max_tokens``) runs to the end. A
    reply without fences is returned stripped."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    loose: list[str] = []
    for line in text.splitlines():
        mark = line.strip()
        if mark.startswith(("```", "~~~")):
            if current is None:
                current = []  # the opening fence; its language tag is dropped
            else:
                blocks.append(current)
                current = None
            continue
        (loose if current is None else current).append(line)
    if current is not None:
        blocks.append(current)
    if not blocks:
        return "\n".join(loose).strip()
    return "\n\n".join("\n".join(b).strip("\n") for b in blocks if "".join(b).strip()).strip()


class HydeRetriever(Retriever):
    """Dense search with an LLM-written hypothetical snippet per question (module doc).

    Parameters (:class:`HydeRetriever.Params`): those of
    :class:`~retrieval_bench.retrieval.dense.DenseRetriever`, which does the
    embedding and the search, and

    * ``rung``: "plain" | "language" | "tree";
    * ``max_tokens``, ``temperature``: of the snippet call;
    * ``include_query``: embed "question + blank line + snippet" instead of the snippet;
    * ``tree_chars``: size cap of the file tree of the "tree" rung.

    Keywords: ``llm``, the model (required; the harness injects it); ``embedder``,
    as for the dense retriever; ``name``, the default run name.
    """

    class Params(DenseRetriever.Params):
        rung: str = "plain"
        max_tokens: int = 200
        # ``float | int``: an int stays one, as given (it is part of the LLM cache key)
        temperature: float | int = 0.0
        include_query: bool = True
        tree_chars: int = 900

    needs_llm = True
    uses_vector_index = True
    uses_embedding_cache = True
    params: HydeRetriever.Params

    def __init__(
        self,
        params: HydeRetriever.Params | None = None,
        /,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        name: str = "hyde",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        if llm is None:
            raise ConfigError("hyde needs a language model: configure an llm for the benchmark")
        if p.rung not in RUNGS:
            raise ConfigError(f"hyde: rung {p.rung!r} is not one of {', '.join(RUNGS)}")
        if p.max_tokens < 1:
            raise ConfigError(f"hyde: max_tokens must be at least 1, got {p.max_tokens}")
        super().__init__()
        self.llm = llm
        self.rung = p.rung
        self.max_tokens = p.max_tokens
        self.temperature = p.temperature
        self.include_query = p.include_query
        self.tree_chars = p.tree_chars
        self.name = name
        inner = {k: getattr(p, k) for k in DenseRetriever.Params.model_fields}
        self.dense = DenseRetriever(DenseRetriever.Params.of(inner), embedder=embedder)
        self.languages: list[str] = []
        """Dominant languages of the indexed corpus (see :func:`dominant_languages`)."""
        self.tree = ""
        """File tree of the indexed corpus shown by the "tree" rung."""
        self.artifacts: dict[str, dict[str, Any]] = {}
        """query id → ``{"snippet": text | None, "prompt_rung": rung}`` of the last search."""
        self.failures: dict[str, str] = {}
        """query id → why the model's snippet could not be used (last search)."""

    @classmethod
    def uses_vector_index_for(cls, params: Mapping[str, Any]) -> bool:
        """As :meth:`DenseRetriever.uses_vector_index_for` (an ONNX backend does not)."""
        return DenseRetriever.uses_vector_index_for(params)

    @property
    def embedder(self) -> Embedder:
        return self.dense.embedder

    def config(self) -> dict[str, Any]:
        """Parameters that determine the results (for provenance)."""
        keys = ("rung", "max_tokens", "temperature", "include_query", "tree_chars")
        return {k: getattr(self, k) for k in keys} | {
            "llm": getattr(self.llm, "model", None),
            "embedder": self.dense.embedder.name,
        }

    def index(self, corpus: Corpus, codebase_index: CodebaseIndex | None = None) -> None:
        """Index the chunks densely; note the corpus's languages and file tree."""
        self.dense.index(corpus, codebase_index=codebase_index)
        self.index_stats = self.dense.index_stats  # texts embedded vs cached, as dense
        self.languages = dominant_languages(corpus.chunks)
        self.tree = file_tree(corpus.paths, self.tree_chars) if self.rung == "tree" else ""

    def prompt(self, question: str) -> str:
        """The user prompt of this rung for ``question`` (the "language" rung falls back to
        the plain prompt when the corpus has no programming language)."""
        languages = " or ".join(self.languages)
        if self.rung == "tree":
            return read_prompt_text(PROMPTS_PACKAGE, "hyde_tree").format(
                tree=self.tree or "(empty)",
                languages=languages or UNKNOWN_LANGUAGES,
                query=question,
            )
        if self.rung == "language" and languages:
            prompt = read_prompt_text(PROMPTS_PACKAGE, "hyde_language")
            return prompt.format(languages=languages, query=question)
        return read_prompt_text(PROMPTS_PACKAGE, "hyde_plain").format(query=question)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunks per query, searched with the hypothetical snippets."""
        self.artifacts, self.failures = {}, {}
        run = Run(self.name, {qid: {} for qid in queries})
        asked = [(qid, q.strip()) for qid, q in queries.items() if q.strip()]
        self.failures.update({qid: "empty query" for qid, q in queries.items() if not q.strip()})
        if not asked:
            return run
        requests = [
            chat_request(self.prompt(q), temperature=self.temperature, max_tokens=self.max_tokens)
            for _, q in asked
        ]
        replies = self.llm.chat_many(requests)
        texts = {
            qid: self._search_text(qid, q, r) for (qid, q), r in zip(asked, replies, strict=True)
        }
        run.scores.update(self.dense.search(texts, k).scores)
        return run

    def _search_text(self, qid: str, question: str, reply: Completion | Exception) -> str:
        """What to embed for one query; records its artifact and any failure."""
        snippet = strip_code_fences(reply.text) if isinstance(reply, Completion) else ""
        self.artifacts[qid] = {"snippet": snippet or None, "prompt_rung": self.rung}
        if not snippet:
            why = (
                f"{type(reply).__name__}: {reply}"
                if isinstance(reply, Exception)
                else "empty reply"
            )
            # not a failure: the query still gets results, from its raw text
            self.artifacts[qid]["fallback"] = f"no snippet ({why}); searched with the raw query"
            return question
        return f"{question}\n\n{snippet}" if self.include_query else snippet

    def __repr__(self) -> str:
        return f"HydeRetriever(rung={self.rung!r}, llm={getattr(self.llm, 'model', '?')!r})"

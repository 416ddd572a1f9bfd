"""What a build or update of a codebase index did (:class:`BuildStats`): files
seen, chunked, reused and removed, texts embedded or served by the cache, time;
printed by ``rbench index`` and read by the perf scripts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuildStats"]


@dataclass
class BuildStats:
    """What a build or update did, for the CLI summary and the perf scripts."""

    mode: str
    """``"build"`` or ``"update"``."""
    files: int = 0
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_unchanged: int = 0
    chunks: int = 0
    texts_embedded: int = 0
    """Unique texts sent to the embedder (a ``CachedEmbedder`` may still serve them)."""
    texts_cached: int = 0
    """Of ``texts_embedded``, those the embedding cache served (no model call)."""
    chunks_reused: int = 0
    """Rows whose vector came from the previous table without calling the embedder."""
    seconds: float = 0.0
    table: str = ""
    skipped: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Every field, for ``rbench index --json``."""
        return dataclasses.asdict(self)

    def summary(self) -> list[str]:
        """Readable lines for ``rbench index``: what was read, chunked, reused and
        embedded, and how long it took."""
        chunked = self.files_added + self.files_changed
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return [
            f"files:  {self.files} seen, {chunked} chunked ({self.files_added} new, "
            f"{self.files_changed} changed), {self.files_unchanged} unchanged, "
            f"{self.files_removed} removed{skipped}",
            f"chunks: {self.chunks} in the index, {self.chunks_reused} reused from the "
            f"previous index",
            f"embeddings: {self.texts_embedded} new texts, "
            f"{self.texts_embedded - self.texts_cached} computed by the model, "
            f"{self.texts_cached} from the embedding cache",
            f"{self.mode} took {self.seconds:.1f}s (table {self.table})",
        ]

"""A sweep phase's progress: which cell runs, how many are done, how long the rest
will take (docs/sweeps.md#progress).

Without it a sweep prints the stage lines of an ordinary run
(``[shopapi] rrf  0.0s``) for every cell, with nothing saying which cell they
belong to. :class:`CellProgress` wraps the command's reporter for one phase:
each cell starts with a line giving its place among all the phase's cells
(counted over every snapshot task the phase runs here) and an ETA from the mean
time of the cells so far, and every note a stage prints while the cell runs is
prefixed with the cell's label::

    sweep select: cell 7/18, eta 2m10s: chunker.budget=512 fusions=[rrf]
    chunker.budget=512 fusions=[rrf]: [shopapi] rrf  0.0s

Counts (the index build, LLM calls) go through unchanged: their labels name
the shared work, which the next cells reuse.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from retrieval_bench.progress import Progress, format_duration


class CellProgress:
    """A :class:`~retrieval_bench.progress.Progress` that knows the running cell."""

    def __init__(
        self,
        inner: Progress,
        phase: str,
        total: int,
        labels: Mapping[int, str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``total`` cells to run in ``phase``; ``labels``: cell number → label."""
        self.inner = inner
        self.phase = phase
        self.total = total
        self.labels = dict(labels)
        self.started = 0
        """Cells begun or skipped so far."""
        self._ran = 0
        self._clock = clock
        self._t0 = clock()
        self._label: str | None = None

    def begin(self, cell: int) -> None:
        """Cell ``cell`` starts: one line with its count among the phase's cells,
        the ETA of the rest (the mean time of the cells run so far, since the
        phase began, times the cells left) and its label."""
        left = self.total - self.started
        self.started += 1
        self._label = self.labels.get(cell, f"cell {cell}")
        eta = ""
        if self._ran:
            mean = (self._clock() - self._t0) / self._ran
            eta = f", eta {format_duration(mean * left)}"
        self._ran += 1
        self.inner.note(f"sweep {self.phase}: cell {self.started}/{self.total}{eta}: {self._label}")

    def skip(self, cells: int) -> None:
        """``cells`` will not run (their snapshot or chunking failed): counted as done."""
        self.started += cells

    def between_cells(self) -> None:
        """Work of no single cell follows (a snapshot's chunking): no prefix."""
        self._label = None

    def __call__(self, label: str, done: int, total: int, unit: str = "") -> None:
        self.inner(label, done, total, unit)

    def note(self, message: str) -> None:
        self.inner.note(message if self._label is None else f"{self._label}: {message}")

"""A sweep phase's progress lines (issue 19 item 16): each cell announced with its
count, an ETA from the cells so far and its label; the stage lines a cell prints
carry its label; counts pass through unchanged."""

from __future__ import annotations

from retrieval_bench.progress import Callback
from retrieval_bench.sweep.progress import CellProgress


class _Clock:
    """A clock the test moves by hand (no timed assertion)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_cells_are_counted_labelled_and_timed() -> None:
    notes: list[str] = []
    counts: list[tuple[str, int, int, str]] = []
    clock = _Clock()
    labels = {0: "chunker.budget=128", 1: "chunker.budget=512", 2: "chunker.budget=1024"}
    lines = CellProgress(
        Callback(lambda *a: counts.append(a), notes.append), "select [shopapi]", 3, labels, clock
    )
    lines.between_cells()
    lines.note("index shopapi built")  # a chunking: no cell's
    lines.begin(0)
    lines.note("[shopapi] bm25  0.4s")
    clock.now += 60
    lines.begin(2)
    lines.note("[shopapi] rrf  0.0s")
    lines("[shopapi] llm-yesno", 3, 9, "calls")
    clock.now += 70
    lines.begin(1)
    assert notes == [
        "index shopapi built",
        "sweep select [shopapi]: cell 1/3: chunker.budget=128",
        "chunker.budget=128: [shopapi] bm25  0.4s",
        "sweep select [shopapi]: cell 2/3, eta 2m00s: chunker.budget=1024",
        "chunker.budget=1024: [shopapi] rrf  0.0s",
        "sweep select [shopapi]: cell 3/3, eta 1m05s: chunker.budget=512",
    ]
    assert counts == [("[shopapi] llm-yesno", 3, 9, "calls")]


def test_skipped_cells_count_as_done_but_not_in_the_mean() -> None:
    notes: list[str] = []
    clock = _Clock()
    lines = CellProgress(Callback(lambda *a: None, notes.append), "select", 4, {}, clock)
    lines.skip(2)  # a snapshot that did not open
    lines.begin(5)
    clock.now += 10
    lines.begin(6)
    assert notes == ["sweep select: cell 3/4: cell 5", "sweep select: cell 4/4, eta 10s: cell 6"]

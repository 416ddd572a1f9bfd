"""The chunker's parse handed to the code graph: the facts of each Python file the
``ast`` chunker parsed, kept for the graph stage so it does not parse the file
again (docs/architecture.md#caches). Here because chunking may not import
retrieval (docs/architecture.md#layers); the facts are read by
:func:`~retrieval_bench.chunking.tree_facts.tree_facts`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict

from tree_sitter import Tree

from retrieval_bench.chunking.tree_facts import FileFacts, tree_facts

log = logging.getLogger(__name__)
HANDED_SIZE = 5_000
"""Facts :func:`hand_over` keeps for the graph stage, oldest dropped first."""

_HANDED: OrderedDict[bytes, FileFacts | None] = OrderedDict()
_HANDED_LOCK = threading.Lock()
_asked = threading.Event()  # the graph stage has asked for facts in this process


def expect_facts() -> None:
    """The run has a code-graph stage: from now on the chunker hands the facts of the
    files it parses over (:func:`hand_over`), from the first file of the first
    snapshot on. Without this call the hand-over starts once the graph stage first
    asks (:func:`take_handed`), so a run without one pays nothing."""
    _asked.set()


def hand_over(tree: Tree, source: bytes) -> None:
    """Leave the facts of ``tree`` (a Python file the chunker parsed from ``source``)
    for :func:`take_handed`, keyed by the sha256 of ``source``: the UTF-8 bytes of
    the text, which decode to that text like the file's own bytes. Only once the
    graph stage has asked for facts in this process (a run without one pays nothing),
    and not for a text with a carriage return (the graph reads it with LF line ends).
    Never raises: the graph stage parses a file it was not handed."""
    if not _asked.is_set() or b"\r" in source:
        return
    try:
        facts = tree_facts(tree, source)
    except Exception:  # a file the rules do not foresee must not stop chunking
        log.debug("no code-graph facts from the chunker's tree", exc_info=True)
        return
    key = b"sha256:" + hashlib.sha256(source).digest()
    with _HANDED_LOCK:
        _HANDED[key] = facts
        while len(_HANDED) > HANDED_SIZE:
            _HANDED.popitem(last=False)


def take_handed(key: bytes) -> tuple[bool, FileFacts | None]:
    """``(found, facts)`` handed over under ``key`` (``b"sha256:"`` + the file's bytes'
    sha256 digest), forgotten here; from now on the chunker hands facts over."""
    _asked.set()
    with _HANDED_LOCK:
        if key in _HANDED:
            return True, _HANDED.pop(key)
    return False, None

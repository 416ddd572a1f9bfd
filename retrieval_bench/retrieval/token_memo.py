"""Term counts of the documents a ``bm25`` index is built over, each file's counts
tokenised once (docs/stages.md#bm25, docs/architecture.md#caches).

:class:`TokenMemo` (one per tokenizer configuration and term store) turns the
texts of an index — chunk texts, or whole files — into :class:`Documents`: term
ids and counts per document, the vocabulary in the order of first occurrence
that ``bm25s`` gives it. The texts one file contributes are a *block*, looked up
in the process memo, then in the workspace's term-count cache
(:mod:`~retrieval_bench.retrieval.term_store`), and only then counted (each
distinct text once per process, by
:meth:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer.term_counts`: the
counts of its tokens, no token list). Only for
:class:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer` (its configuration
is the key); ``RBENCH_CHUNK_CACHE=0`` turns it off.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.term_store import CACHE_FILE, Block, TermStore, block_key

_MEMO_LIMIT = 20_000_000
"""Term ids and counts (int32: at most about 160 MB) one memo holds before it starts
afresh."""

_KEYS_LIMIT = 200_000
"""Block keys one memo remembers by their texts before it starts afresh."""

IntArray = np.ndarray


@dataclass(frozen=True)
class Documents:
    """Documents as term counts: entry ``i`` says term ``terms[i]`` (an id into
    ``vocab``) occurs ``counts[i]`` times in document ``docs[i]``; a term may have
    several entries in one document (they add up). ``vocab`` is in the order of
    first occurrence in the documents one after the other."""

    vocab: dict[str, int]
    terms: IntArray
    docs: IntArray
    counts: IntArray
    lengths: IntArray

    @classmethod
    def of_sequences(cls, vocab: dict[str, int], flat: IntArray, lengths: IntArray) -> Documents:
        """Documents given as token ids one after the other (``lengths`` each)."""
        docs = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        ones = np.ones(len(flat), dtype=np.int64)
        return cls(vocab, flat.astype(np.int64), docs, ones, lengths.astype(np.int64))

    def sequences(self) -> list[list[int]]:
        """Each document's token ids (repeats in a row: the order within a document
        does not change a BM25 score), for ``bm25s``'s own build."""
        out: list[list[int]] = [[] for _ in range(len(self.lengths))]
        for term, doc, count in zip(
            self.terms.tolist(), self.docs.tolist(), self.counts.tolist(), strict=True
        ):
            out[doc].extend([term] * count)
        return out


class TokenMemo:
    """Term counts of texts for one tokenizer configuration (module doc): memoised per
    file's block for the process and, with a store, on disk."""

    def __init__(self, tokenizer: CodeTokenizer, store: TermStore | None = None) -> None:
        self.tokenizer = tokenizer
        self.store = store
        self.analyser = repr(
            (sorted(tokenizer.stopwords), tokenizer.min_len, tokenizer.keep_identifier,
             tokenizer.digits)
        )  # fmt: skip
        # without a store, the vocabulary is the process's own
        self._words: list[str] = [""]
        self._ids: dict[str, int] = {}
        self._blocks: dict[bytes, Block] = {}
        self._paths: dict[str, Block] = {}
        self._texts: dict[str, tuple[IntArray, IntArray]] = {}  # ids, counts
        self._keys: dict[tuple[str, ...], bytes] = {}  # a block's texts → its key
        self._held = 0
        self._generation = 0 if store is None else store.generation
        self._lock = threading.Lock()  # one vocabulary: threads add to it one at a time

    @property
    def words(self) -> list[str]:
        """Term of each id."""
        return self.store.words if self.store is not None else self._words

    def _add_terms(self, tokens: Iterable[Iterable[str]]) -> dict[str, int]:
        """The term → id map, every term of the token lists ``tokens`` in it (new terms
        in sorted order: an id only names a term, the index orders terms by first
        occurrence)."""
        ids = self.store.ids if self.store is not None else self._ids
        new = sorted(set(chain.from_iterable(tokens)).difference(ids))
        if self.store is not None:
            self.store.add_terms(new)
            return self.store.ids
        words = self._words
        for t in new:
            ids[t] = len(words)
            words.append(t)
        return ids

    def documents(self, texts: Sequence[str], paths: Sequence[str], with_paths: bool) -> Documents:
        """The documents ``text (+ path's tokens, with_paths)``, one per text. The
        texts of consecutive documents of one path are one block (a file's chunks,
        or its whole text): read from the memo or the store, or tokenised once."""
        with self._lock:
            return self._documents(texts, paths, with_paths)

    def _generation_now(self) -> int:
        return 0 if self.store is None else self.store.generation

    def _documents(self, texts: Sequence[str], paths: Sequence[str], with_paths: bool) -> Documents:
        while True:  # again when the store started over (damaged file) meanwhile
            if self._held > _MEMO_LIMIT or self._generation_now() != self._generation:
                self._blocks, self._paths, self._texts, self._held = {}, {}, {}, 0  # no id in use
                self._generation = self._generation_now()
            made = self._assemble(texts, paths, with_paths)
            if self._generation_now() == self._generation:
                return made

    def _assemble(self, texts: Sequence[str], paths: Sequence[str], with_paths: bool) -> Documents:
        groups: list[tuple[int, int]] = []  # [start, end) of each path's run of texts
        for i, path in enumerate(paths):
            if i == 0 or path != paths[i - 1]:
                groups.append((i, i + 1))
            else:
                groups[-1] = (groups[-1][0], i + 1)
        keys = [self._key(tuple(texts[a:b])) for a, b in groups]
        self._fill(keys, groups, texts)
        blocks = [self._blocks[k] for k in keys]
        if with_paths:
            self._fill_paths(paths)
            blocks += [self._paths[p] for p in paths]

        def joined(field: int) -> IntArray:
            if not blocks:
                return np.zeros(0, np.int64)
            return np.concatenate([b[field] for b in blocks]).astype(np.int64)

        sizes, flat, counts = joined(0), joined(1), joined(2)
        n = len(texts)
        # entries: the texts' (documents 0..n-1), then, with paths, the paths' (again
        # documents 0..n-1); each entry's place in the documents read one after the other
        # (document, text before path, position): what decides first occurrence
        part_doc = np.arange(len(sizes), dtype=np.int64) % max(n, 1)
        part_path = np.arange(len(sizes), dtype=np.int64) >= n
        docs = np.repeat(part_doc, sizes)
        starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
        place = docs << 32 | np.repeat(part_path, sizes).astype(np.int64) << 31
        place |= np.arange(len(flat), dtype=np.int64) - starts
        lengths = np.bincount(docs, weights=counts, minlength=n).astype(np.int64)
        # first occurrence of each id (O(n), no sort of the n ids), then the present ids
        # in that order: the local vocabulary (the same order as over the token
        # sequences: term_store's module doc)
        n_words = len(self.words)
        none = np.iinfo(np.int64).max
        first = np.full(n_words, none, dtype=np.int64)
        np.minimum.at(first, flat, place)
        present = np.flatnonzero(first < none)
        order = present[np.argsort(first[present], kind="stable")]
        local = np.zeros(n_words, dtype=np.int64)
        local[order] = np.arange(len(order), dtype=np.int64)
        words = self.words
        vocab = dict(zip(map(words.__getitem__, order.tolist()), range(len(order)), strict=True))
        return Documents(vocab, local[flat], docs, counts, lengths)

    def _key(self, texts: tuple[str, ...]) -> bytes:
        """:func:`block_key` of ``texts``, remembered: a snapshot shares most files with
        the one before, and the same string objects hash and compare at no cost."""
        key = self._keys.get(texts)
        if key is None:
            if len(self._keys) >= _KEYS_LIMIT:
                self._keys.clear()
            key = self._keys[texts] = block_key(self.analyser, texts)
        return key

    def _fill(self, keys: list[bytes], groups: list[tuple[int, int]], texts: Sequence[str]) -> None:
        """Put the blocks of ``keys`` the memo lacks in it: from the store, else
        tokenised (and stored)."""
        missing = [k for k in dict.fromkeys(keys) if k not in self._blocks]
        if not missing:
            return
        found = self.store.get_blocks(missing) if self.store is not None else {}
        for key, block in found.items():
            self._remember(key, block)
        todo: dict[bytes, Sequence[str]] = {}
        for key, (a, b) in zip(keys, groups, strict=True):
            if key not in self._blocks:
                todo[key] = texts[a:b]
        if not todo:
            return
        # a new version of a file mostly repeats chunk texts an earlier one had:
        # each distinct text is counted once per process
        known = self._texts
        new = [t for t in dict.fromkeys(t for group in todo.values() for t in group)
               if t not in known]  # fmt: skip
        counted = [self.tokenizer.term_counts(t) for t in new]
        ids = self._add_terms(counted)
        for text, terms in zip(new, counted, strict=True):
            known[text] = _counted(terms, ids)
            self._held += 2 * len(terms)
        made = {k: _joined([known[t] for t in group]) for k, group in todo.items()}
        for key, block in made.items():
            self._remember(key, block)
        if self.store is not None:
            self.store.put_blocks(made)

    def _remember(self, key: bytes, block: Block) -> None:
        self._blocks[key] = block
        self._held += 2 * len(block.ids)

    def _fill_paths(self, paths: Sequence[str]) -> None:
        new = [p for p in dict.fromkeys(paths) if p not in self._paths]
        if not new:
            return
        counted = [self.tokenizer.term_counts(p) for p in new]
        ids = self._add_terms(counted)
        for path, terms in zip(new, counted, strict=True):
            self._paths[path] = _joined([_counted(terms, ids)])


def _counted(terms: dict[str, int], ids: dict[str, int]) -> tuple[IntArray, IntArray]:
    """``terms`` (term → count, first-occurrence order) as arrays of ids and counts."""
    n = len(terms)
    return (
        np.fromiter(map(ids.__getitem__, terms), np.int32, n),
        np.fromiter(terms.values(), np.int32, n),
    )


def _joined(texts: Sequence[tuple[IntArray, IntArray]]) -> Block:
    """The block of texts given as (ids, counts) each."""
    if not texts:
        return Block(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32))
    sizes = np.fromiter((len(i) for i, _ in texts), np.int32, len(texts))
    return Block(
        sizes,
        np.concatenate([i for i, _ in texts]).astype(np.int32, copy=False),
        np.concatenate([c for _, c in texts]).astype(np.int32, copy=False),
    )


_MEMOS: dict[tuple[Any, ...], TokenMemo] = {}


def memo_for(tokenizer: object, store_dir: str | Path | None = None) -> TokenMemo | None:
    """The process's memo for ``tokenizer``'s configuration and the term store in
    ``store_dir`` (none: the process's own vocabulary); None for other tokenizers
    (their output cannot be keyed) or when ``RBENCH_CHUNK_CACHE`` is off."""
    if not isinstance(tokenizer, CodeTokenizer) or type(tokenizer) is not CodeTokenizer:
        return None
    if not chunk_cache_enabled():
        return None
    config = (tokenizer.stopwords, tokenizer.min_len, tokenizer.keep_identifier, tokenizer.digits)
    folder = None if store_dir is None else Path(store_dir).resolve()
    key = (config, folder)
    memo = _MEMOS.get(key)
    if memo is None:
        store = None if folder is None else TermStore.shared(folder / CACHE_FILE)
        copy = CodeTokenizer(
            tokenizer.stopwords, min_len=config[1], keep_identifier=config[2], digits=config[3]
        )
        memo = _MEMOS[key] = TokenMemo(copy, store)
    return memo

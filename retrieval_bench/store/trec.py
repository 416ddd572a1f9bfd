"""TREC run and qrels files, the exchange format of every stage's results
(docs/architecture.md#the-run-folder).

Run file, one line per retrieved document (trec_eval's format)::

    qid Q0 docid rank score tag

Qrels file, one line per judgement::

    qid 0 docid relevance

Fields are separated by whitespace, yet query ids, doc ids and tags may hold
some: chunk ids start with the file's path (``my dir/a b.py:10-42:3f2a``),
and query ids and stage labels come from the user. So every id and tag is
written *encoded*: each whitespace character (anything ``str.isspace``
accepts, Unicode spaces included) and each ``%`` becomes the
percent-encoding of its UTF-8 bytes (``' '`` → ``%20``, ``'\t'`` → ``%09``,
``'%'`` → ``%25``, no-break space → ``%C2%A0``); every other character,
non-ASCII letters included, is written as is (UTF-8). Reading decodes with
:func:`urllib.parse.unquote`, so a round trip gives back the original ids,
and ids without whitespace or ``%`` (``src/a.py:10-42:3f2a``) read the same
in trec_eval, which never decodes. Use :func:`encode_id` / :func:`decode_id`
to match ids in these files by hand. An empty id or tag cannot be written and
raises :class:`TrecFormatError`.

Ranks are written in :meth:`Run.ranked` order (score descending, ties by
ascending id) and scores with ``repr`` so that reading gives back the exact
floats. Reading ignores the rank column, as trec_eval does (it re-sorts by
score), and rejects a document listed twice for one query.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote, unquote

from retrieval_bench.errors import RBenchError
from retrieval_bench.types import Run

__all__ = [
    "TrecFormatError",
    "decode_id",
    "encode_id",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
]


class TrecFormatError(RBenchError, ValueError):
    """A TREC run or qrels file (or a value to be written to one) is malformed."""


def encode_id(value: str) -> str:
    """``value`` as one whitespace-free TREC field: whitespace and ``%`` percent-encoded."""
    if "%" not in value and value.split() == [value]:  # nothing to encode (split: C speed)
        return value
    return "".join(quote(c, safe="") if c == "%" or c.isspace() else c for c in value)


def decode_id(field: str) -> str:
    """The original id of a field written by :func:`encode_id`."""
    return unquote(field)


def _field(kind: str, value: str) -> str:
    """``value`` encoded for a TREC file; an empty value cannot be written."""
    if not value:
        raise TrecFormatError(f"{kind} is empty, which TREC files cannot hold")
    return encode_id(value)


def write_run(path: str | Path, run: Run, tag: str | None = None, k: int | None = None) -> int:
    """Write ``run`` (top ``k`` per query when given) to ``path``; returns lines written.

    ``tag`` defaults to ``run.name``. Queries are written in the run's order.
    """
    tag = _field("run tag", tag if tag is not None else run.name)
    lines: list[str] = []
    for qid in run.query_ids():
        q = _field("query id", qid)
        for rank, (docid, score) in enumerate(run.ranked(qid, k), start=1):
            lines.append(f"{q} Q0 {_field('doc id', docid)} {rank} {score!r} {tag}\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    return len(lines)


def _rows(path: str | Path, n_fields: int, what: str) -> Iterator[tuple[int, list[str]]]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != n_fields:
                raise TrecFormatError(
                    f"{path}:{lineno}: a {what} line has {n_fields} fields, found {len(parts)}"
                )
            yield lineno, parts


def read_run(path: str | Path, name: str | None = None) -> Run:
    """Read a TREC run file. ``name`` defaults to the file's tag (if it has one tag)."""
    scores: dict[str, dict[str, float]] = {}
    tags: set[str] = set()
    for lineno, (q, _q0, d, _rank, score, tag) in _rows(path, 6, "run"):
        qid, docid = decode_id(q), decode_id(d)
        try:
            value = float(score)
        except ValueError:
            raise TrecFormatError(f"{path}:{lineno}: score {score!r} is not a number") from None
        docs = scores.setdefault(qid, {})
        if docid in docs:
            raise TrecFormatError(f"{path}:{lineno}: doc {docid!r} repeated for query {qid!r}")
        docs[docid] = value
        tags.add(decode_id(tag))
    if name is None:
        name = tags.pop() if len(tags) == 1 else Path(path).stem
    return Run(name, scores)


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> int:
    """Write ``{qid: {docid: relevance}}`` as a qrels file; returns lines written."""
    lines = [
        f"{_field('query id', q)} 0 {_field('doc id', d)} {int(rel)}\n"
        for q, docs in qrels.items()
        for d, rel in docs.items()
    ]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    return len(lines)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into ``{qid: {docid: relevance}}`` (a repeated pair keeps the last)."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, (qid, _iter, docid, rel) in _rows(path, 4, "qrels"):
        try:
            qrels.setdefault(decode_id(qid), {})[decode_id(docid)] = int(rel)
        except ValueError:
            raise TrecFormatError(f"{path}:{lineno}: relevance {rel!r} is not an integer") from None
    return qrels

"""The Meilisearch backend of ``fuzzy`` (docs/stages.md#fuzzy).

Meilisearch is the fuzzy engine next to dense and exact search, and the scaled
alternative to the embedded tantivy index
(docs/architecture.md#components-and-how-each-starts), used when a server URL is
configured. This module talks to that server through the official
``meilisearch`` client (0.43):

* **Index.** ``POST /indexes`` with ``primaryKey: "id"`` (an already existing
  index is fine), then ``PATCH /indexes/{uid}/settings`` with
  :func:`settings_body`: searchable attributes ``tokens`` (the chunk's code
  tokens from ``CodeTokenizer``, space-joined) then ``path`` (its path's
  tokens), ``typoTolerance.minWordSizeForTypos`` from the same
  :class:`~retrieval_bench.retrieval.typo_budget.TypoBudget` as the embedded backend,
  and Meilisearch's default ranking rules (set explicitly, so a reused index
  cannot keep custom ones). Documents go up in batches of ``batch_size``
  (``POST /indexes/{uid}/documents``); every task is awaited
  (``GET /tasks/{taskUid}`` until ``succeeded``; ``failed`` raises with the
  server's error code and message).
* **Ids.** Chunk ids contain ``:`` and ``/``, which Meilisearch document ids
  may not (only ``a-z A-Z 0-9 - _``), so each document's ``id`` is
  :func:`safe_id` — a 128-bit hash of the chunk id — and the chunk id rides
  along in ``chunk_id``; hits are mapped back through the kept table.
* **Reuse.** Without ``index_uid`` the index is named ``rbench_<hash>`` after
  the chunk ids and tokenizer, so an unchanged corpus finds its documents
  already there (checked with ``GET /indexes/{uid}/stats``) and skips the
  upload. A user-named index is emptied before every upload instead.
* **Search.** Queries go in groups through ``POST /multi-search``, each with
  ``limit=k`` and ``showRankingScore=true``; the score of a hit is its
  ``_rankingScore`` (0–1). A query with no usable token is not sent (an empty
  ``q`` would be a placeholder search returning arbitrary documents) and gets
  an empty list. ``k`` above the index's ``pagination.maxTotalHits`` (1000 by
  default) is capped by the server.

Every failure becomes one :class:`~retrieval_bench.errors.IndexBuildError`
line naming the URL: unreachable server (``MeilisearchCommunicationError``),
an error response (``MeilisearchApiError``, with its code), a timeout, or a
failed task.

No Meilisearch server can be installed on the development machines (it is
on neither PyPI, Debian nor npm), so the unit tests drive this module through
a stub HTTP layer replaying Meilisearch's documented JSON; a live test runs
when ``RBENCH_MEILI_URL`` is set.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import meilisearch
from meilisearch.errors import (
    MeilisearchApiError,
    MeilisearchCommunicationError,
    MeilisearchTimeoutError,
)
from meilisearch.models.task import TaskInfo

from retrieval_bench.errors import IndexBuildError
from retrieval_bench.retrieval.typo_budget import TypoBudget

T = TypeVar("T")

RANKING_RULES = ("words", "typo", "proximity", "attribute", "sort", "exactness")
"""Meilisearch's default ranking rules, in order."""

_ERRNO_RE = re.compile(r"\[Errno -?\d+\][^'\")]*")


def safe_id(chunk_id: str) -> str:
    """A Meilisearch-valid document id (32 hex digits) for a chunk id."""
    return hashlib.blake2b(chunk_id.encode("utf-8"), digest_size=16).hexdigest()


def settings_body(budget: TypoBudget, include_path: bool) -> dict[str, Any]:
    """The index settings this backend needs (``PATCH /indexes/{uid}/settings``)."""
    return {
        "searchableAttributes": ["tokens", "path"] if include_path else ["tokens"],
        "displayedAttributes": ["id", "chunk_id"],
        "typoTolerance": {
            "enabled": True,
            "minWordSizeForTypos": {"oneTypo": budget.one_typo, "twoTypos": budget.two_typos},
        },
        "rankingRules": list(RANKING_RULES),
        "stopWords": [],
    }


def documents(
    chunk_ids: Sequence[str], texts: Sequence[Sequence[str]], paths: Sequence[Sequence[str]]
) -> list[dict[str, str]]:
    """One Meilisearch document per chunk: safe id, chunk id, joined tokens."""
    return [
        {"id": safe_id(cid), "chunk_id": cid, "tokens": " ".join(text), "path": " ".join(path)}
        for cid, text, path in zip(chunk_ids, texts, paths, strict=True)
    ]


def search_request(index_uid: str, text: str, k: int) -> dict[str, Any]:
    """One query of a ``POST /multi-search`` body."""
    return {
        "indexUid": index_uid,
        "q": text,
        "limit": k,
        "showRankingScore": True,
        "attributesToRetrieve": ["id"],
    }


def parse_hits(result: Mapping[str, Any], id_map: Mapping[str, str]) -> dict[str, float]:
    """``{chunk_id: _rankingScore}`` from one search result (unknown ids skipped)."""
    hits = result.get("hits")
    if not isinstance(hits, list):
        raise ValueError(f"search result without a 'hits' list: keys {sorted(result)}")
    out: dict[str, float] = {}
    for hit in hits:
        chunk_id = id_map.get(str(hit.get("id")))
        if chunk_id is not None and chunk_id not in out:
            out[chunk_id] = float(hit.get("_rankingScore", 0.0))
    return out


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class MeiliBackend:
    """Index and search chunk tokens on a Meilisearch server (see module doc)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        index_uid: str | None = None,
        budget: TypoBudget | None = None,
        include_path: bool = True,
        batch_size: int = 1000,
        timeout_s: float = 60.0,
        queries_per_request: int = 100,
    ) -> None:
        if batch_size < 1 or queries_per_request < 1:
            raise ValueError("batch_size and queries_per_request must be at least 1")
        self.url = url.rstrip("/")
        self.index_uid = index_uid
        self.budget = budget or TypoBudget()
        self.include_path = include_path
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.queries_per_request = queries_per_request
        self.client = meilisearch.Client(self.url, api_key, timeout=max(1, math.ceil(timeout_s)))
        self.active_uid: str | None = None
        """The index searched (``index_uid``, or the derived name once built)."""
        self.reused = False
        """Whether the last build found its documents already on the server."""
        self._id_map: dict[str, str] = {}

    # -- error handling

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        """Run one client call, turning client errors into one-line messages."""
        try:
            return fn()
        except MeilisearchCommunicationError as exc:
            found = _ERRNO_RE.search(exc.message)
            reason = found.group(0).strip() if found else _one_line(exc.message, 160)
            raise IndexBuildError(
                f"fuzzy: cannot reach Meilisearch at {self.url} ({action}): {reason}; "
                "start the server or fix the fuzzy retriever's url"
            ) from None
        except MeilisearchApiError as exc:
            code = exc.code or f"HTTP {exc.status_code}"
            hint = "; check api_key" if exc.status_code in (401, 403) else ""
            raise IndexBuildError(
                f"fuzzy: Meilisearch at {self.url} rejected {action}: "
                f"{code}: {_one_line(exc.message)}{hint}"
            ) from None
        except MeilisearchTimeoutError:
            raise IndexBuildError(
                f"fuzzy: Meilisearch at {self.url} did not finish {action} within "
                f"{self.timeout_s:g} s; raise timeout_s or check the server's load"
            ) from None

    def _wait(self, info: TaskInfo, action: str, ok_codes: tuple[str, ...] = ()) -> None:
        """Wait for one task; a failed or canceled task raises (unless its code is ok)."""
        task = self._call(
            action,
            lambda: self.client.wait_for_task(
                info.task_uid, timeout_in_ms=int(self.timeout_s * 1000), interval_in_ms=50
            ),
        )
        if task.status == "succeeded":
            return
        error = task.error or {}
        if task.status == "failed" and error.get("code") in ok_codes:
            return
        detail = f"{error.get('code', task.status)}: {_one_line(error.get('message', ''))}"
        raise IndexBuildError(
            f"fuzzy: Meilisearch at {self.url} could not {action} (task {info.task_uid} "
            f"{task.status}): {detail}"
        )

    # -- index and search

    def build(
        self,
        chunk_ids: Sequence[str],
        texts: Sequence[Sequence[str]],
        paths: Sequence[Sequence[str]],
        *,
        fingerprint: str,
    ) -> None:
        """Create/update the index and upload the documents (skipped when reusable)."""
        id_map: dict[str, str] = {}
        for cid in chunk_ids:
            sid = safe_id(cid)
            if id_map.setdefault(sid, cid) != cid:  # 2^-128 odds; never silently merge
                raise IndexBuildError(f"fuzzy: chunk ids {id_map[sid]!r} and {cid!r} collide")
        uid = self.index_uid or f"rbench_{fingerprint}"
        client = self.client
        self._wait(
            self._call("create index", lambda: client.create_index(uid, {"primaryKey": "id"})),
            f"create index {uid!r}",
            ok_codes=("index_already_exists",),
        )
        index = client.index(uid)
        body = settings_body(self.budget, self.include_path)
        self._wait(
            self._call("update settings", lambda: index.update_settings(body)),
            f"update the settings of {uid!r}",
        )
        reuse = False
        if self.index_uid is None:  # content-addressed name: same documents or a partial upload
            stats = self._call("read index stats", index.get_stats)
            reuse = stats.number_of_documents == len(id_map)
        else:
            self._wait(
                self._call("clear documents", index.delete_all_documents),
                f"clear the documents of {uid!r}",
            )
        if not reuse:
            docs = documents(chunk_ids, texts, paths)
            tasks = [  # enqueue all batches first: the server groups them into one batch
                self._call(
                    "upload documents",
                    partial(index.add_documents, docs[i : i + self.batch_size], primary_key="id"),
                )
                for i in range(0, len(docs), self.batch_size)
            ]
            for info in tasks:
                self._wait(info, f"index documents into {uid!r}")
        self.active_uid = uid
        self.reused = reuse
        self._id_map = id_map

    def search(self, tokens: Mapping[str, Sequence[str]], k: int) -> dict[str, dict[str, float]]:
        """``{query_id: {chunk_id: _rankingScore}}`` for tokenised queries."""
        out: dict[str, dict[str, float]] = {qid: {} for qid in tokens}
        uid = self.active_uid
        if uid is None:
            raise IndexBuildError("fuzzy: the Meilisearch index is not built; call index() first")
        if k <= 0:
            return out
        pending = [(qid, " ".join(t)) for qid, t in tokens.items() if t]
        step = self.queries_per_request
        for start in range(0, len(pending), step):
            group = pending[start : start + step]
            body = [search_request(uid, text, k) for _, text in group]
            response = self._call("search", partial(self.client.multi_search, body))
            results = response.get("results") if isinstance(response, Mapping) else None
            if not isinstance(results, list) or len(results) != len(group):
                raise IndexBuildError(
                    f"fuzzy: Meilisearch at {self.url} sent an unexpected multi-search "
                    f"response ({len(group)} queries): {_one_line(repr(response), 160)}"
                )
            for (qid, _), result in zip(group, results, strict=True):
                try:
                    out[qid] = parse_hits(result, self._id_map)
                except (ValueError, TypeError, AttributeError) as exc:
                    raise IndexBuildError(
                        f"fuzzy: Meilisearch at {self.url} sent a malformed search result: {exc}"
                    ) from None
        return out

"""The Meilisearch backend of ``fuzzy`` against a stub HTTP layer (no server runs here).

The official client (``meilisearch`` 0.43) sends its requests through the
module-level ``requests.get/post/patch/delete`` functions; :class:`FakeMeili`
replaces them and answers with the JSON shapes Meilisearch documents (task
info on every write, task objects on ``GET /tasks/{uid}``, search results in
``POST /multi-search``), so the real client code parses real-shaped answers.
``test_live_server`` runs against a real server when ``RBENCH_MEILI_URL`` is set.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import meilisearch._httprequests
import pytest
import requests

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import IndexBuildError
from retrieval_bench.retrieval.fuzzy import FuzzyRetriever
from retrieval_bench.retrieval.meili import (
    MeiliBackend,
    documents,
    parse_hits,
    safe_id,
    search_request,
    settings_body,
)
from retrieval_bench.retrieval.typo_budget import TypoBudget
from retrieval_bench.types import Chunk

URL = "http://meili.test:7700"
STAMP = "2025-01-01T00:00:00.000000Z"


def _chunk(cid: str, path: str, text: str) -> Chunk:
    return Chunk(cid, path, 1, text.count("\n") + 1, "python", "function", None, text)


CHUNKS = [
    _chunk("src/json_utils.py:1-2:ab12", "src/json_utils.py", "def parse_json(line): ..."),
    _chunk("src/auth.py:1-2:cd34", "src/auth.py", "def check_authentication(user): ..."),
    _chunk("src/billing.py:1-2:ef56", "src/billing.py", "def charge(order, amount): ..."),
]


def _response(status: int, body: Any, url: str) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = {200: "OK", 202: "Accepted", 401: "Unauthorized", 404: "Not Found"}.get(
        status, "Error"
    )
    response.url = url
    response._content = b"" if body is None else json.dumps(body).encode()
    response.encoding = "utf-8"
    return response


class FakeMeili:
    """A stand-in for the ``requests`` module: records calls, replies like Meilisearch."""

    exceptions = requests.exceptions

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, list[str]], Any, dict[str, str]]] = []
        self.indexes: dict[str, dict[str, dict[str, Any]]] = {}
        self.tasks: dict[int, dict[str, Any]] = {}
        self.fail: dict[str, dict[str, str]] = {}  # task type → error object
        self.reject: tuple[int, dict[str, str]] | None = None  # every request → this error

    def get(self, url: str, **kw: Any) -> requests.Response:
        return self._handle("GET", url, kw)

    def post(self, url: str, **kw: Any) -> requests.Response:
        return self._handle("POST", url, kw)

    def patch(self, url: str, **kw: Any) -> requests.Response:
        return self._handle("PATCH", url, kw)

    def put(self, url: str, **kw: Any) -> requests.Response:
        return self._handle("PUT", url, kw)

    def delete(self, url: str, **kw: Any) -> requests.Response:
        return self._handle("DELETE", url, kw)

    def paths(self, method: str | None = None) -> list[str]:
        return [p for m, p, *_ in self.calls if method in (None, m)]

    def _enqueue(
        self, index_uid: str, kind: str, apply: Any = None, error: dict[str, str] | None = None
    ) -> dict[str, Any]:
        uid = len(self.tasks)
        error = error or self.fail.get(kind)
        if error is None and apply is not None:
            apply()
        self.tasks[uid] = {
            "uid": uid,
            "indexUid": index_uid,
            "status": "failed" if error else "succeeded",
            "type": kind,
            "details": {},
            "error": error,
            "duration": "PT0.001S",
            "enqueuedAt": STAMP,
            "startedAt": STAMP,
            "finishedAt": STAMP,
            "polls": 0,
        }
        return {
            "taskUid": uid,
            "indexUid": index_uid,
            "status": "enqueued",
            "type": kind,
            "enqueuedAt": STAMP,
        }

    def _handle(self, method: str, url: str, kw: dict[str, Any]) -> requests.Response:
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == URL
        data = kw.get("data")
        body = json.loads(data) if isinstance(data, str) and data else None
        self.calls.append((method, parts.path, parse_qs(parts.query), body, kw["headers"]))
        if self.reject is not None:
            return _response(self.reject[0], self.reject[1], url)
        status, reply = self._route(method, parts.path.strip("/").split("/"), body)
        return _response(status, reply, url)

    def _route(self, method: str, seg: list[str], body: Any) -> tuple[int, Any]:
        if method == "GET" and seg[0] == "tasks":
            task = dict(self.tasks[int(seg[1])])
            self.tasks[int(seg[1])]["polls"] += 1
            if task.pop("polls") == 0:  # first poll: still processing
                task |= {"status": "processing", "error": None, "finishedAt": None}
            return 200, task
        if method == "POST" and seg == ["indexes"]:
            uid = body["uid"]
            exists = {
                "message": f"Index `{uid}` already exists.",
                "code": "index_already_exists",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#index_already_exists",
            }
            create = partial(self.indexes.setdefault, uid, {})
            return 202, self._enqueue(
                uid, "indexCreation", create, exists if uid in self.indexes else None
            )
        if method == "POST" and seg == ["multi-search"]:
            return 200, {"results": [self._search(q) for q in body["queries"]]}
        uid, rest = seg[1], seg[2:]
        docs = self.indexes[uid]
        if method == "PATCH" and rest == ["settings"]:
            return 202, self._enqueue(uid, "settingsUpdate")
        if method == "GET" and rest == ["stats"]:
            fields = {"id": len(docs), "chunk_id": len(docs), "tokens": len(docs)}
            return 200, {
                "numberOfDocuments": len(docs),
                "isIndexing": False,
                "fieldDistribution": fields,
            }
        if method == "DELETE" and rest == ["documents"]:
            return 202, self._enqueue(uid, "documentDeletion", docs.clear)
        if method == "POST" and rest == ["documents"]:
            return 202, self._enqueue(
                uid, "documentAdditionOrUpdate", lambda: docs.update({d["id"]: d for d in body})
            )
        raise AssertionError(f"unexpected request {method} /{'/'.join(seg)}")

    def _search(self, query: dict[str, Any]) -> dict[str, Any]:
        """Naive stand-in ranking: share of query words in tokens/path (no typos)."""
        words = query["q"].split()
        scored = []
        for doc in self.indexes[query["indexUid"]].values():
            have = set(doc["tokens"].split()) | set(doc["path"].split())
            share = sum(w in have for w in words) / len(words)
            if share:
                scored.append((-share, doc["id"]))
        scored.sort()
        hits = [{"id": i, "_rankingScore": -s} for s, i in scored[: query["limit"]]]
        return {
            "indexUid": query["indexUid"],
            "hits": hits,
            "query": query["q"],
            "processingTimeMs": 0,
            "limit": query["limit"],
            "offset": 0,
            "estimatedTotalHits": len(scored),
        }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeMeili:
    server = FakeMeili()
    monkeypatch.setattr(meilisearch._httprequests, "requests", server)
    return server


def _retriever(**params: Any) -> FuzzyRetriever:
    return FuzzyRetriever(url=URL, api_key="secret", timeout_s=5, **params)


def test_safe_ids_are_valid_stable_and_distinct() -> None:
    ids = [c.id for c in CHUNKS] + ["a:b", "a_b", "ä/ß:1"]
    safe = [safe_id(i) for i in ids]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,511}", s) for s in safe)
    assert len(set(safe)) == len(ids)
    assert safe_id("a:b") == safe_id("a:b")


def test_request_bodies() -> None:
    assert settings_body(TypoBudget(4, 8), include_path=True) == {
        "searchableAttributes": ["tokens", "path"],
        "displayedAttributes": ["id", "chunk_id"],
        "typoTolerance": {"enabled": True, "minWordSizeForTypos": {"oneTypo": 4, "twoTypos": 8}},
        "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
        "stopWords": [],
    }
    assert settings_body(TypoBudget(), include_path=False)["searchableAttributes"] == ["tokens"]
    assert documents(["p:1"], [["parse", "json"]], [["src", "x"]]) == [
        {"id": safe_id("p:1"), "chunk_id": "p:1", "tokens": "parse json", "path": "src x"}
    ]
    assert search_request("ix", "parse json", 7) == {
        "indexUid": "ix",
        "q": "parse json",
        "limit": 7,
        "showRankingScore": True,
        "attributesToRetrieve": ["id"],
    }


def test_parse_hits() -> None:
    id_map = {safe_id("a:1"): "a:1", safe_id("b:2"): "b:2"}
    result = {
        "hits": [
            {"id": safe_id("b:2"), "_rankingScore": 0.9},
            {"id": "stale-document", "_rankingScore": 0.8},
            {"id": safe_id("a:1"), "_rankingScore": 0.5},
        ],
        "estimatedTotalHits": 3,
    }
    assert parse_hits(result, id_map) == {"b:2": 0.9, "a:1": 0.5}
    assert parse_hits({"hits": [], "estimatedTotalHits": 0}, id_map) == {}
    with pytest.raises(ValueError, match="hits"):
        parse_hits({"message": "oops"}, id_map)


def test_index_then_search(fake: FakeMeili) -> None:
    retriever = _retriever(batch_size=2)
    retriever.index(Corpus(Path("."), list(CHUNKS)))
    meili = retriever._meili
    assert meili is not None and meili.active_uid is not None
    uid = meili.active_uid
    assert re.fullmatch(r"rbench_[0-9a-f]{16}", uid)
    assert fake.calls[0][1] == "/indexes"
    assert fake.calls[0][3] == {"uid": uid, "primaryKey": "id"}
    settings = [c for c in fake.calls if c[0] == "PATCH"]
    assert settings[0][1] == f"/indexes/{uid}/settings"
    assert settings[0][3] == settings_body(TypoBudget(), include_path=True)
    uploads = [c for c in fake.calls if c[0] == "POST" and c[1].endswith("/documents")]
    assert [len(c[3]) for c in uploads] == [2, 1]  # batches of batch_size
    assert all(c[2] == {"primaryKey": ["id"]} for c in uploads)
    assert uploads[0][3][0] == {
        "id": safe_id(CHUNKS[0].id),
        "chunk_id": CHUNKS[0].id,
        "tokens": "parse_json parse json line",
        "path": "src json_utils json utils py",
    }
    assert all(c[4]["Authorization"] == "Bearer secret" for c in fake.calls)
    # every task was polled until done (the fake answers "processing" first)
    assert all(t["polls"] >= 2 for t in fake.tasks.values())

    run = retriever.search({"q1": "parse json", "empty": "the of", "q2": "billing charge"}, 5)
    search_calls = [c for c in fake.calls if c[1] == "/multi-search"]
    assert len(search_calls) == 1
    sent = search_calls[0][3]["queries"]
    assert [q["q"] for q in sent] == ["parse json", "billing charge"]  # empty query not sent
    assert all(q["limit"] == 5 and q["showRankingScore"] is True for q in sent)
    assert run.ranked("q1") == [(CHUNKS[0].id, 1.0)]
    assert run.ids("q2") == [CHUNKS[2].id]
    assert run.ids("empty") == []
    assert run.name == "fuzzy"


def test_reuse_and_user_named_index(fake: FakeMeili) -> None:
    corpus = Corpus(Path("."), list(CHUNKS))
    first = _retriever()
    first.index(corpus)
    n_calls = len(fake.calls)
    again = _retriever()
    again.index(corpus)  # same chunks: index exists ("index_already_exists" is fine) and is full
    assert again._meili is not None and again._meili.reused
    new = fake.calls[n_calls:]
    assert not any(c[1].endswith("/documents") for c in new)
    named = _retriever(index_uid="code")
    named.index(corpus)
    assert named._meili is not None and not named._meili.reused
    assert "/indexes/code/documents" in fake.paths("DELETE")  # a named index is emptied first
    assert len(fake.indexes["code"]) == len(CHUNKS)


def test_failed_task_names_url_and_code(fake: FakeMeili) -> None:
    fake.fail["documentAdditionOrUpdate"] = {
        "message": "Document identifier `a:b` is invalid.",
        "code": "invalid_document_id",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#invalid_document_id",
    }
    with pytest.raises(IndexBuildError) as err:
        _retriever().index(Corpus(Path("."), list(CHUNKS)))
    message = str(err.value)
    assert URL in message and "invalid_document_id" in message and "failed" in message
    assert "\n" not in message


def test_api_error_names_url_and_hint(fake: FakeMeili) -> None:
    fake.reject = (
        401,
        {
            "message": "The provided API key is invalid.",
            "code": "invalid_api_key",
            "type": "auth",
            "link": "https://docs.meilisearch.com/errors#invalid_api_key",
        },
    )
    with pytest.raises(IndexBuildError, match=r"meili\.test:7700 rejected create index: "):
        _retriever().index(Corpus(Path("."), list(CHUNKS)))
    try:
        _retriever().index(Corpus(Path("."), list(CHUNKS)))
    except IndexBuildError as exc:
        assert "invalid_api_key" in str(exc) and "check api_key" in str(exc)


def test_malformed_search_response(fake: FakeMeili, monkeypatch: pytest.MonkeyPatch) -> None:
    retriever = _retriever()
    retriever.index(Corpus(Path("."), list(CHUNKS)))
    monkeypatch.setattr(fake, "_search", lambda query: {"message": "no hits here"})
    with pytest.raises(IndexBuildError, match="malformed search result"):
        retriever.search({"q": "parse"}, 3)


def test_search_before_index() -> None:
    with pytest.raises(IndexBuildError, match="call index"):
        MeiliBackend(URL).search({"q": ["parse"]}, 3)


def test_unreachable_server_is_one_clear_line() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    retriever = FuzzyRetriever(url=url, timeout_s=2)
    with pytest.raises(IndexBuildError) as err:
        retriever.index(Corpus(Path("."), list(CHUNKS)))
    message = str(err.value)
    assert message.startswith(f"fuzzy: cannot reach Meilisearch at {url} (create index)")
    assert "start the server" in message and "\n" not in message


@pytest.mark.integration
@pytest.mark.skipif(
    not os.environ.get("RBENCH_MEILI_URL"),
    reason="no Meilisearch server: set RBENCH_MEILI_URL=http://HOST:7700 "
    "(and RBENCH_MEILI_KEY if it has a master key) to run this test",
)
def test_live_server() -> None:
    url = os.environ["RBENCH_MEILI_URL"]
    uid = f"rbench_test_{os.getpid()}_{int(time.time())}"
    retriever = FuzzyRetriever(url=url, api_key=os.environ.get("RBENCH_MEILI_KEY"), index_uid=uid)
    try:
        retriever.index(Corpus(Path("."), list(CHUNKS)))
        run = retriever.search({"typo": "pasre_json", "auth": "authentcation", "none": ""}, 3)
        assert run.ids("typo")[0] == CHUNKS[0].id
        assert run.ids("auth")[0] == CHUNKS[1].id
        assert run.ids("none") == []
        assert all(0.0 < s <= 1.0 for s in run.scores["typo"].values())
    finally:
        meili = retriever._meili
        assert meili is not None
        meili.client.delete_index(uid)

"""What a request to the web UI must carry before any route runs
(docs/architecture.md#web-ui-security), as in Jupyter and TensorBoard.

* **Host.** The ``Host`` header names this server: a loopback name
  (``127.0.0.1``, ``localhost``, ``[::1]``) or the host it listens on, else 400.
  A page of another site whose name was re-pointed at 127.0.0.1 (DNS rebinding)
  sends its own name and is refused. The port is not compared, so an SSH tunnel
  (``ssh -L 9000:127.0.0.1:8000``) still works. On a wildcard address
  (``0.0.0.0``, ``::``) any name is accepted: the token is then required for
  every request.
* **Token.** A per-server secret (:func:`secrets.token_urlsafe`, or the user's
  ``--token``/``RBENCH_TOKEN``). Opening any page with ``?token=TOKEN`` stores it
  in the cookie ``rbench-token-PORT`` (``SameSite=Strict``, read by the page's own
  script, which sends it back in the ``X-RBench-Token`` header) and redirects to
  the address without it. The cookie alone never authorises a write: another
  site can neither read it nor add a custom header without a CORS preflight,
  which this server never grants.
* **Writes** (any method but GET, HEAD, OPTIONS) need the token in
  ``X-RBench-Token`` (or ``Authorization: Bearer TOKEN``), an ``Origin`` (when
  sent) equal to the address the request went to, and a JSON body: else 403, or
  415 for a body of another type (the form and ``text/plain`` posts a browser
  sends cross-site without asking).
* **Reads** (GET, HEAD) are open on a loopback host; on any other host they need
  the token too (the header, the cookie or ``?token=``).

Every response also forbids framing (``X-Frame-Options: DENY``), so another site
cannot overlay the prompt lab's buttons.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrieval_bench.web.errors import Failure, render

__all__ = ["HEADER", "Guard", "GuardMiddleware", "cookie_name", "is_loopback", "url_host"]

HEADER = "X-RBench-Token"
"""The request header that carries the token (the page's script sends it)."""

_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_FRAME_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
]


def _bare(host: str) -> str:
    """``[::1]`` → ``::1``; names lower-cased."""
    return host.strip().strip("[]").lower()


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.1``, ``::1``)."""
    name = _bare(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """``host`` as written in a URL (an IPv6 address in brackets)."""
    name = _bare(host)
    return f"[{name}]" if ":" in name else name


def _split_host(header: str) -> tuple[str, str]:
    """A ``Host`` header → (name, port); the port is ``""`` when absent, and the
    name is ``""`` when the header is malformed (``localhost:1@evil``,
    ``[::1]junk``): a port is digits only."""
    value = header.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        if rest and not rest.startswith(":"):
            return "", ""
        port = rest[1:]
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    if port and not port.isdigit():
        return "", ""
    return name, port


def cookie_name(host_header: str) -> str:
    """``rbench-token-PORT``: cookies are shared by every port of a host, so the
    name carries the port that two servers on one machine do not share."""
    return f"rbench-token-{_split_host(host_header)[1] or '80'}"


@dataclass(frozen=True)
class Guard:
    """The server's token and the host it listens on."""

    token: str
    host: str = "127.0.0.1"

    @classmethod
    def new(cls, host: str = "127.0.0.1", token: str | None = None) -> Guard:
        """A guard with ``token``, or a fresh random one."""
        return cls(token or secrets.token_urlsafe(32), host)

    @property
    def loopback(self) -> bool:
        """Reads are open without the token only on a loopback host."""
        return is_loopback(self.host)

    def host_allowed(self, header: str) -> bool:
        """Does a ``Host`` header name this server (see the module docstring)?"""
        name = _split_host(header)[0]
        if _bare(self.host) in _WILDCARDS:
            return bool(name) or not header.strip()
        return bool(name) and (name in _LOOPBACK_NAMES or name == _bare(self.host))

    def token_ok(self, given: str | None) -> bool:
        """``given`` is the token (compared in constant time)."""
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())

    def check(self, conn: HTTPConnection) -> Response | None:
        """The refusal for a request, or None when it may reach the routes."""
        method = conn.scope.get("method", "GET")
        host = conn.headers.get("host", "")
        if not self.host_allowed(host):
            return _refuse(conn, 400, "Wrong address",
                           f"Host {host or '(none)'!r} is not this server's address; open it "
                           f"as 127.0.0.1 or localhost (or {self.host})")  # fmt: skip
        given = conn.query_params.get("token")
        if given is not None and method in ("GET", "HEAD"):
            if not self.token_ok(given):
                return _refuse(conn, 403, "Wrong token",
                               "the token in the address is not this server's; open the "
                               "address `rbench serve` printed")  # fmt: skip
            return _login(conn, self.token)
        if method not in _SAFE_METHODS:
            return self._check_write(conn, host)
        if not self.loopback and not self._authorised(conn, cookie=True):
            return _refuse(conn, 403, "Token needed",
                           f"this server listens on {self.host} and needs its token for "
                           "every request: open the address `rbench serve` printed "
                           "(…/?token=…)")  # fmt: skip
        return None

    def _check_write(self, conn: HTTPConnection, host: str) -> Response | None:
        origin = conn.headers.get("origin")
        if origin is not None and not _same_origin(origin, host):
            return _refuse(conn, 403, "Refused",
                           f"cross-origin request refused: Origin {origin!r} is not this "
                           f"server ({host})")  # fmt: skip
        if not self._authorised(conn, cookie=False):
            return _refuse(conn, 403, "Token needed",
                           f"saving or running needs this server's token in the {HEADER} "
                           "header: open the address `rbench serve` printed (…/?token=…) "
                           "once in this browser, then reload")  # fmt: skip
        ctype = conn.headers.get("content-type", "")
        if _has_body(conn) and ctype.split(";")[0].strip().lower() != "application/json":
            return _refuse(conn, 415, "Not JSON",
                           f"the request body must be JSON (Content-Type: application/json), "
                           f"not {ctype or 'untyped'}")  # fmt: skip
        return None

    def _authorised(self, conn: HTTPConnection, cookie: bool) -> bool:
        """The token in the header (or ``Authorization``), or with ``cookie`` in the cookie."""
        auth = conn.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        given = [conn.headers.get(HEADER)]
        if scheme.lower() in ("bearer", "token"):
            given.append(value.strip())
        if cookie:
            given.append(conn.cookies.get(cookie_name(conn.headers.get("host", ""))))
        return any(self.token_ok(g) for g in given)


def _same_origin(origin: str, host: str) -> bool:
    """``Origin`` names the scheme and address the request was sent to."""
    parts = urlsplit(origin.strip().lower())
    return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()


def _has_body(conn: HTTPConnection) -> bool:
    length = conn.headers.get("content-length")
    return "transfer-encoding" in conn.headers or (length is not None and length.strip() != "0")


def _login(conn: HTTPConnection, token: str) -> Response:
    """``?token=`` was right: the cookie, and back to the address without the token."""
    query = conn.url.remove_query_params("token").query
    raw = conn.scope.get("raw_path") or conn.url.path.encode()
    # one leading slash: ``//evil.example/`` would be a link to another site
    path = "/" + raw.decode("latin-1").lstrip("/\\")
    target = path + (f"?{query}" if query else "")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(cookie_name(conn.headers.get("host", "")), token, path="/",
                        httponly=False, samesite="strict")  # fmt: skip
    return response


def _refuse(conn: HTTPConnection, status: int, title: str, message: str) -> Response:
    """JSON ``{"error": ...}`` for the API and writes, a readable page otherwise."""
    if conn.url.path.startswith("/api/") or conn.scope.get("method") not in _SAFE_METHODS:
        return JSONResponse({"error": message}, status_code=status)
    todo = ["Open the address `rbench serve` printed when it started (…/?token=…)."]
    return HTMLResponse(render(Failure(status, title, message, None, todo)), status_code=status)


class GuardMiddleware:
    """ASGI middleware: :meth:`Guard.check` before the app; frame headers after."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_FRAME_HEADERS]}
            await send(message)

        refusal = self.guard.check(HTTPConnection(scope))
        if refusal is not None:
            await refusal(scope, receive, framed)
            return
        await self.app(scope, receive, framed)

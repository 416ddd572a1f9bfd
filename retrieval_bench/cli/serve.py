"""``rbench serve``: the web UI (:mod:`retrieval_bench.web`) on HOST:PORT.

Everything that can be wrong is checked before the one line that gives the address
(docs/architecture.md#web-ui-security): the workspace exists, the token is usable,
a host off loopback has a token set by the user, and the port can be bound (the
socket is bound here and handed to uvicorn, so a busy port is a one-line error
instead of uvicorn's exit 3 after the address was printed).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import socket
import sys

from retrieval_bench.cli.common import EXIT_OK, workspace
from retrieval_bench.errors import ConfigError

_TOKEN = re.compile(r"[A-Za-z0-9._~-]{8,}")
_MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe())'"


def _token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``$RBENCH_TOKEN``, else None (a random one is made)."""
    given = args.token if args.token is not None else os.environ.get("RBENCH_TOKEN")
    if given is None:
        return None
    where = "--token" if args.token is not None else "RBENCH_TOKEN"
    if not _TOKEN.fullmatch(given):
        raise ConfigError(
            f"{where} must be at least 8 characters of A-Z a-z 0-9 . _ ~ - "
            f"(make one with: {_MAKE_TOKEN})"
        )
    return given


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a busy or unusable address is a ConfigError."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        busy = exc.errno == errno.EADDRINUSE
        hint = "pick another with --port" if busy else "check --host and --port"
        raise ConfigError(f"cannot listen on {host}:{port}: {why}; {hint}") from exc
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from retrieval_bench.web.app import create_app
    from retrieval_bench.web.guard import Guard, is_loopback, url_host

    ws = workspace(args)
    if not ws.root.is_dir():
        what = "is not a folder" if ws.root.exists() else "does not exist"
        raise ConfigError(
            f"workspace {ws.root} {what}; pass --workspace DIR (or set RBENCH_HOME) "
            "to a workspace that `rbench run` wrote, or create the folder to start an empty one"
        )
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port: give 1 to 65535 (0: any free one)")
    token = _token(args)
    host = args.host
    if not is_loopback(host) and token is None:
        raise ConfigError(
            f"refusing to serve on {host}, which other machines can reach, without a token "
            "of your own: set one with --token or RBENCH_TOKEN (every request then needs it), "
            "or keep the default --host 127.0.0.1"
        )
    guard = Guard.new(host, token)
    sock = _bind(host, args.port)
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if host.strip("[]") in ("0.0.0.0", "::", "") else url_host(host)
    reads = "open on loopback" if is_loopback(host) else "need the token too"
    print(f"rbench: serving {ws.root} at http://{shown}:{port}/?token={guard.token} "
          f"(listening on {url_host(host)}; saves and runs need the token, reads {reads})",
          file=sys.stderr, flush=True)  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(create_app(ws, guard=guard), log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return EXIT_OK

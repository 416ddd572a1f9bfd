"""``rbench serve``: the web UI (:mod:`retrieval_bench.web`) on HOST:PORT."""

from __future__ import annotations

import argparse
import sys

from retrieval_bench.cli.common import EXIT_OK, workspace


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from retrieval_bench.web.app import create_app

    ws = workspace(args)
    print(f"rbench: serving {ws.root} at http://{args.host}:{args.port}/", file=sys.stderr)
    uvicorn.run(create_app(ws), host=args.host, port=args.port, log_level="warning")
    return EXIT_OK

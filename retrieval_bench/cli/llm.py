"""``rbench llm start|stop|status``: the local model server.

``status`` exits 0 when the server is running and 1 when not, with or
without ``--json``, so scripts can test it.
"""

from __future__ import annotations

import argparse
import json

from retrieval_bench.cli.common import EXIT_FAILED, EXIT_OK, workspace


def cmd_llm(args: argparse.Namespace) -> int:
    from retrieval_bench.llm.local_server import LocalServer

    server = LocalServer(workspace(args))
    if args.llm_cmd == "start":
        st = server.start(threads=args.threads)
        print(f"local model server running: {st.base_url} (pid {st.pid}, model {st.alias})")
    elif args.llm_cmd == "stop":
        print("stopped" if server.stop() else "no local model server was running")
    else:
        status = server.status()
        if args.json:
            print(json.dumps(status))
        elif status.get("running"):
            health = "healthy" if status.get("healthy") else "NOT answering"
            print(f"running at {status['base_url']} (pid {status['pid']}), {health}")
        else:
            print("not running (start it with: rbench llm start)")
        # one exit code for both forms, so scripts can test it: 0 running, 1 not
        return EXIT_OK if status.get("running") else EXIT_FAILED
    return EXIT_OK

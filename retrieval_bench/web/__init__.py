"""Web UI (docs/architecture.md#interfaces), served by ``rbench serve``: runs, funnels, comparisons,
per-query drill-down and the prompt lab. Entry point: :func:`retrieval_bench.web.app.create_app`."""

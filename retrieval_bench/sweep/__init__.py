"""``rbench sweep``: run one benchmark config over a grid of stage parameters.

:mod:`~retrieval_bench.sweep.spec` reads the ``sweep:`` section of a config
(which parameters vary, the objective, the selection and report splits);
:mod:`~retrieval_bench.sweep.grid` expands it into cells, each a complete,
validated :class:`~retrieval_bench.config.BenchmarkConfig`
(docs/configuration.md#sweep).
"""

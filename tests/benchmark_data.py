"""Where the tests find the benchmark data the bundled configs read, and why they skip
without it (README.md#benchmark-data, docs/configuration.md#data-root).

The devsets, the SWE-bench Lite dev tarballs and the git bundles of upstream
histories are not in the repository: the bundled configs read them from the *data
root*, ``${RBENCH_DATA_ROOT:-../../../shared/data}`` (``$RBENCH_DATA_ROOT``, else
``../shared/data`` beside the checkout). A user's clone has no ``../shared`` beside
it, so a test that needs the data skips, naming the folder and how to point at one,
where CI (which has the data) runs it. Tests say so with the ``needs_data_root``
marker, optionally naming the files they read under the root
(``@pytest.mark.needs_data_root("devsets/pytest-7.4.0.jsonl")``), or take the
``data_root`` fixture for the folder's path; both are registered in
``tests/conftest.py`` and resolve the root here, exactly as a bundled config does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.data_root import DATA_ROOT_ENV, DataRoot, expand_data_root

REPO_ROOT = Path(__file__).resolve().parents[1]
CONFIGS = REPO_ROOT / "benchmarks" / "configs"
"""The bundled configs; their data-root placeholders are relative to this folder."""
PLACEHOLDER = "${RBENCH_DATA_ROOT:-../../../shared/data}"
"""How every bundled config names the data root (tests/unit/test_data_root.py checks it)."""


def data_root() -> DataRoot:
    """The data root a bundled config would read now: ``$RBENCH_DATA_ROOT`` when set,
    else ``../shared/data`` beside the repository. Resolved by the toolkit's own
    :func:`~retrieval_bench.data_root.expand_data_root`, so the tests skip exactly
    when ``rbench run benchmarks/configs/...`` would refuse for want of the data."""
    probe = {"root": PLACEHOLDER}
    root = expand_data_root(probe, CONFIGS, "tests/benchmark_data.py")
    assert root is not None  # the probe holds the placeholder
    return root


def missing_data(*needs: str) -> str | None:
    """Why a test that reads ``needs`` (paths relative to the data root; none: just
    the folder) cannot run here, or None when it can."""
    root = data_root()
    how = (
        f"point ${DATA_ROOT_ENV} at the folder that holds devsets/, swebench-lite-dev/ and "
        "repos/ to run it (README.md#benchmark-data)"
    )
    if not root.path.is_dir():
        where = f"the data root {root.path} ({root.origin})"
        return f"needs the benchmark data: {where} is absent; {how}"
    for rel in needs:
        if not (root.path / rel).exists():
            return f"needs the benchmark data: {rel} is not in the data root {root.path}; {how}"
    return None


def skip_without_data(*needs: str) -> Path:
    """The data root's path; the calling test skips (with :func:`missing_data`'s
    reason) when the folder, or one of ``needs`` in it, is absent."""
    reason = missing_data(*needs)
    if reason is not None:
        pytest.skip(reason)
    return data_root().path

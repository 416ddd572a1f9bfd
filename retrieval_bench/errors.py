"""Errors with one-line, actionable messages (docs/architecture.md#bad-input-and-failures).

Each names the input and what to do about it. The CLI prints ``str(error)``
and exits non-zero; nothing already stored is touched.
"""

from __future__ import annotations


class RBenchError(Exception):
    """Base class: the message is a complete one-line explanation for the user."""


class SnapshotError(RBenchError):
    """A repository snapshot cannot be opened, downloaded or verified."""


class DatasetError(RBenchError):
    """A dataset file or row is malformed."""


class ConfigError(RBenchError):
    """A benchmark config is invalid; the message names the bad key."""


class IndexBuildError(RBenchError):
    """An index cannot be built, opened or queried."""


class ToolMissingError(RBenchError):
    """An external binary (ripgrep, git) cannot be found."""

"""Scoring a predictions file with answer metrics (``rbench eval``)."""

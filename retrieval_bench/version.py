"""The toolkit's version (recorded in every run's provenance and checkpoint)."""

__version__ = "0.1.0"

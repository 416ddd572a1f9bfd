"""Running a benchmark: prepare each dataset, run its stage graph per snapshot group,
score and record (docs/architecture.md#how-a-benchmark-run-flows)."""

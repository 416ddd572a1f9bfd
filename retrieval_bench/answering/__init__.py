"""Answering (docs/stages.md#answerer): prompting the LLM with the final chunks, and the code
references (files, line ranges, symbols) an answer cites, checked against the
repository snapshot (:mod:`retrieval_bench.answering.references`)."""

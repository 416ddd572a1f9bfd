"""Answering each question from one stage's top chunks, and storing the answers'
scores (docs/stages.md#answerer)."""

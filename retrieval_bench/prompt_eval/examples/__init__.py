"""The two worked use cases shipped with retrieval_bench (SPEC §4): action-item
extraction from meeting notes and a code-question classifier, each with
ground-truth rows and starting prompts in ``data/``."""

"""The two worked use cases shipped with retrieval_bench
(docs/architecture.md#prompt-evaluation): action-item extraction from meeting
notes and a code-question classifier, each with ground-truth rows and starting
prompts in ``data/``."""

"""Training a code retriever on a repository's history: ``rbench fit-dense``
(docs/stages.md#fit-dense).

After SweRank (Reddy et al. 2025, arXiv 2505.07849): questions are commit messages,
positives the functions each commit modified (one training instance per modified
function), hard negatives the most similar unmodified functions of the same
snapshot, pairs the base model cannot place in its top ``filter_top`` dropped
(consistency filtering), and the embedder trained with InfoNCE over in-batch and
hard negatives.

* :mod:`~retrieval_bench.dense_training.documents`: a file's definitions as training documents;
* :mod:`~retrieval_bench.dense_training.questions`: questions with positives and a pool, from git;
* :mod:`~retrieval_bench.dense_training.selection`: consistency filter and hard negatives;
* :mod:`~retrieval_bench.dense_training.trainer`: the training loop;
* :mod:`~retrieval_bench.dense_training.model_folder`: the model folder and its manifest.
"""

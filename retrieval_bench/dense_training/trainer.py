"""The training loop of ``rbench fit-dense`` (docs/stages.md#fit-dense).

InfoNCE over in-batch and hard negatives (van den Oord, Li & Vinyals 2018; the
form SweRank and DPR train with): for a batch of B instances with h hard
negatives each, the question q_i is scored against all B positives and all
B·h negatives, ``L = mean_i −log softmax_j(scale · cos(q_i, d_j))[pos_i]``,
sentence-transformers' ``MultipleNegativesRankingLoss`` (scale 20, i.e. a
temperature of 0.05). Two instances of one question never share a batch (the
other's positive would be a false negative). AdamW with a linear warm-up over
the first ``warmup`` share of the steps and a linear decay after; gradients
clipped at norm 1; seeded shuffling, so a rerun on the same data and settings
repeats the same steps.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval_bench.dense_training.selection import Instance


@dataclass(frozen=True)
class TrainSettings:
    """The hyper-parameters of one training (recorded in the manifest)."""

    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup: float = 0.1
    max_seq_length: int = 128
    scale: float = 20.0
    seed: int = 0
    query_prefix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainStats:
    """What the training did, for the manifest and the note."""

    steps: int = 0
    sequences: int = 0
    seconds: float = 0.0
    first_loss: float = 0.0
    last_loss: float = 0.0

    @property
    def sequences_per_second(self) -> float:
        return self.sequences / self.seconds if self.seconds else 0.0


def batches(instances: Sequence[Instance], size: int, rng: random.Random) -> list[list[Instance]]:
    """The instances in shuffled batches of ``size`` (the last may be smaller), no two of
    one question in a batch; an instance that fits no open batch starts the next one."""
    order = list(instances)
    rng.shuffle(order)
    out: list[list[Instance]] = []
    pending = order
    while pending:
        batch: list[Instance] = []
        seen: set[str] = set()
        rest: list[Instance] = []
        for item in pending:
            if len(batch) < size and item.question not in seen:
                batch.append(item)
                seen.add(item.question)
            else:
                rest.append(item)
        out.append(batch)
        pending = rest
    return out


def _on_device(features: dict[str, Any], device: Any) -> dict[str, Any]:
    """A preprocessed batch with its tensors on ``device`` (other entries, such as
    sentence-transformers' ``modality`` string, as they are)."""
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in features.items()}


def train(
    base: Path,
    instances: Sequence[Instance],
    settings: TrainSettings,
    *,
    device: str,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[Any, TrainStats]:
    """Fine-tune the sentence-transformers model at ``base`` on ``instances``; the model
    (in eval mode, its ``max_seq_length`` as loaded) and the statistics."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.manual_seed(settings.seed)
    model = SentenceTransformer(str(base), device=device)
    inference_length = model.max_seq_length
    model.max_seq_length = settings.max_seq_length
    loss_fn = MultipleNegativesRankingLoss(model, scale=settings.scale)
    rng = random.Random(settings.seed)
    plan = [batches(instances, settings.batch_size, rng) for _ in range(settings.epochs)]
    total = sum(len(epoch) for epoch in plan)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    warm = max(1, int(total * settings.warmup))

    def rate(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    stats = TrainStats()
    model.train()
    started = time.perf_counter()
    for epoch in plan:
        for batch in epoch:
            columns = [
                [settings.query_prefix + i.query for i in batch],
                [i.positive for i in batch],
            ]
            columns += [[i.negatives[n] for i in batch] for n in range(len(batch[0].negatives))]
            features = [_on_device(model.preprocess(col), model.device) for col in columns]
            loss = loss_fn(features, None)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            value = float(loss.detach())
            stats.first_loss = stats.first_loss if stats.steps else value
            stats.last_loss = value
            stats.steps += 1
            stats.sequences += sum(len(c) for c in columns)
            if progress is not None:
                progress(stats.steps, total, "steps")
    stats.seconds = time.perf_counter() - started
    model.eval()
    model.max_seq_length = inference_length
    return model, stats

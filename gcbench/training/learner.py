"""The master's side of training: the model and its optimizer, and an update from the workers' messages.

The one master (gcbench/master) calls ``update`` with the results it used,
whatever the cluster: Ray or torch.distributed workers, or the simulator's in-process workers. An
update decodes their messages with the scheme (least-squares weights when the
decode is approximate) and steps the optimizer. An asynchronous update
(``rescale``) divides an approximate decode by the fraction of a mini-batch it
represents (``coverage``), so every update is a mean-gradient estimate whatever
k is; when one worker contributes two results to it (possible with
``k_batch_async``), its messages are averaged.
"""

from __future__ import annotations

import numpy as np
import torch

from gcbench.coding import Scheme
from gcbench.training.gradients import FlatModel
from gcbench.training.models import build_model


class Learner:
    """The model of one run, on the master's CPU; ``weights()`` is what the workers are sent."""

    def __init__(self, scheme: Scheme, training, classes: int, seed: int) -> None:
        self.scheme = scheme
        self.model = build_model(training.model, classes, seed)
        self.flat = FlatModel(self.model, training)
        self.optimizer = self.flat.optimizer
        self.d = int(sum(p.numel() for p in self.model.parameters()))

    def weights(self) -> np.ndarray:
        """The current weights (a view: a cluster copies what it publishes before the next step)."""
        return self.flat.weights()

    def update(self, results: list, rescale: bool) -> float:
        """Decode the results' messages, step, and return the loss of the partitions they computed."""
        by_worker: dict[int, list] = {}
        for result in results:
            by_worker.setdefault(result.job.worker, []).append(result.messages)
        received = {w: _average(messages) for w, messages in by_worker.items()}
        order = received_ids(self.scheme, received)
        exact, _ = self.scheme.decode_quality(order)
        gradient = torch.from_numpy(self.scheme.decode(received, d=self.d, approximate=not exact))
        if rescale and not exact:
            gradient = gradient / max(coverage(self.scheme, order), 1e-12)
        self.flat.step(gradient)
        return batch_loss([result.losses for result in results], self.scheme.k)


def received_ids(scheme: Scheme, received: dict[int, list]) -> list[int]:
    """The ids of the messages received: each worker's, but for those missing (None: a worker whose later
    messages had not arrived when the master stopped)."""
    # (strict=False: a list may end before the worker's last messages, those not received)
    pairs = (zip(scheme.messages(w), vectors, strict=False) for w, vectors in received.items())
    return [mid for pair in pairs for mid, vector in pair if vector is not None]


def batch_loss(losses: list[dict[int, float] | None], partitions: int) -> float:
    """Mean loss over the partitions computed (the mini-batch loss when every partition is covered).

    Each partition's loss is its share of the mini-batch's mean loss, so the k shares sum to it."""
    merged = {j: value for part in losses if part for j, value in part.items()}
    return float(sum(merged.values()) * partitions / len(merged)) if merged else float("nan")


def coverage(scheme: Scheme, order: list[int]) -> float:
    """The fraction of the mini-batch an approximate decode represents (1 when exact): mean of W R over T."""
    decoding = scheme.approximate_decoding(order)
    target = float(scheme.m * scheme.k)
    return float(np.clip(1.0 + decoding.error_coefficients.sum() / target, 0.0, None))


def _average(message_lists: list[list[np.ndarray]]) -> list[np.ndarray]:
    if len(message_lists) == 1:
        return message_lists[0]
    return [np.mean(np.stack(parts), axis=0) for parts in zip(*message_lists, strict=True)]

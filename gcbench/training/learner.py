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
from gcbench.compression import Compressor, Payload
from gcbench.training.device import to_host
from gcbench.training.gradients import FlatModel
from gcbench.training.models import build_model


class Learner:
    """The model of one run, on the master's device; ``weights()`` is what the workers are sent."""

    def __init__(self, scheme: Scheme, training, classes: int, seed: int, compressor: Compressor | None = None,
                 device: str | torch.device = "cpu") -> None:  # fmt: skip
        """``compressor``: the variant's, when its messages arrive compressed (they are decompressed, then decoded).
        ``device``: where the model steps and, on a GPU, where the messages are decoded (one matrix product
        there, gcbench/coding/_apply.py); on the CPU they are decoded as the numpy arrays they arrive as."""
        self.scheme, self.compressor, self.device = scheme, compressor, torch.device(device)
        self.model = build_model(training.model, classes, seed).to(self.device)
        self.flat = FlatModel(self.model, training)
        self.optimizer = self.flat.optimizer
        self.d = int(sum(p.numel() for p in self.model.parameters()))
        self.compression_error = float("nan")

    def weights(self) -> np.ndarray:
        """The current weights (a view: a cluster copies what it publishes before the next step)."""
        return self.flat.weights()

    def update(self, results: list, rescale: bool) -> float:
        """Decode the results' messages, step, and return the loss of the partitions they computed."""
        received = self._received(results, "messages")
        order = received_ids(self.scheme, received)
        exact, _ = self.scheme.decode_quality(order)
        decoded = self.scheme.decode(self._on_device(received), d=self.d, approximate=not exact)
        gradient = decoded if torch.is_tensor(decoded) else torch.from_numpy(decoded)
        self.compression_error = self._compression_error(results, gradient, exact)
        if rescale and not exact:
            gradient = gradient / max(coverage(self.scheme, order), 1e-12)
        self.flat.step(gradient)
        return batch_loss([result.losses for result in results], self.scheme.k)

    def _received(self, results: list, field: str) -> dict[int, list]:
        """Per worker, the vectors of its results' ``field`` (messages, decompressed; or their exact copies),
        averaged where one worker gave several results."""
        by_worker: dict[int, list] = {}
        for result in results:
            by_worker.setdefault(result.job.worker, []).append([self._vector(m) for m in getattr(result, field)])
        return {w: _average(messages) for w, messages in by_worker.items()}

    def _on_device(self, received: dict[int, list]) -> dict[int, list]:
        """The messages where the model is: on a GPU, copied there (so the decode runs there) into the rows of
        one block where they share a length and dtype (the decode's matrix product then reads them where
        they are); on the CPU, the numpy arrays themselves."""
        if self.device.type == "cpu":
            return received
        vectors = [v for messages in received.values() for v in messages if v is not None]
        if not vectors:
            return received
        if len({(v.shape, v.dtype) for v in vectors}) == 1:
            block = torch.empty((len(vectors), *vectors[0].shape), dtype=torch.from_numpy(vectors[0][:0]).dtype,
                                device=self.device)  # fmt: skip
            rows = iter(block.unbind(0))
            move = lambda v: next(rows).copy_(torch.from_numpy(np.ascontiguousarray(v)))  # noqa: E731
        else:
            move = lambda v: torch.from_numpy(np.ascontiguousarray(v)).to(self.device)  # noqa: E731
        return {w: [None if v is None else move(v) for v in messages] for w, messages in received.items()}

    def _vector(self, message):
        """A message as a vector: a compressed one decompressed (None, a message not received, stays None)."""
        return self.compressor.decompress(message) if isinstance(message, Payload) else message

    def _compression_error(self, results: list, gradient: torch.Tensor, exact: bool) -> float:
        """||decoded - the same decode of the uncompressed messages|| / ||that||, where every result kept them."""
        if self.compressor is None or any(result.exact is None for result in results):
            return float("nan")
        decoded = to_host(gradient)
        reference = self.scheme.decode(self._received(results, "exact"), d=self.d, approximate=not exact)
        norm = float(np.linalg.norm(reference))
        return float(np.linalg.norm(decoded - reference)) / norm if norm > 0 else float("nan")


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
